package ledger

import (
	"errors"
	"fmt"
)

// Serialized node layout: the XRP Ledger's state map, as rippled stores a
// node and serves it by hash, the hash prefix first:
//
//	inner: "MIN\x00" | 16 child hashes of 32 bytes, branch 0 first, zero for an empty branch
//	leaf:  "MLN\x00" | entry data (any length) | key [32]byte
//
// The node's name is the SHA512Half of exactly these bytes, so Verify is one
// hash of what a peer sent. The prefix keeps the two kinds apart: the bytes of
// a leaf can never also decode as an inner node under the same hash. An inner
// node always hashes all 516 bytes, empty branches included; a leaf puts its
// key after the data.
var (
	prefixInner  = [4]byte{'M', 'I', 'N', 0} // 4D 49 4E 00
	prefixLeaf   = [4]byte{'M', 'L', 'N', 0} // 4D 4C 4E 00
	prefixLedger = [4]byte{'L', 'W', 'R', 0} // 4C 57 52 00: a ledger header (see Header.Hash)
)

const (
	prefixSize = 4

	// InnerSize is the size of every serialized inner node: the prefix and
	// 16 hashes.
	InnerSize = prefixSize + 16*HashSize

	// leafOverhead is what a leaf adds to its entry: the prefix and the key.
	leafOverhead = prefixSize + HashSize

	// MaxNodeSize bounds the serialized size of any node Generate produces
	// (a leaf with the largest entry). Hosts can use it to size buffers and
	// frame limits. Loaded ledgers may hold larger entries: Load does not
	// limit them.
	MaxNodeSize = leafOverhead + MaxPayload
)

// Kind says whether a node is an inner node or a leaf.
type Kind uint8

// The kinds of node.
const (
	Inner Kind = iota + 1
	Leaf
)

func (k Kind) String() string {
	switch k {
	case Inner:
		return "inner"
	case Leaf:
		return "leaf"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ErrMalformed is returned by Decode for bytes that are not a node.
var ErrMalformed = errors.New("ledger: malformed node")

// Node is a decoded node. For an inner node Branches and Children are set; for
// a leaf Key and Payload are. The zero Node has Kind 0 and is not a node.
type Node struct {
	Kind Kind

	// Branches has bit b set when the inner node has a child on branch b
	// (the child whose keys have this node's depth-th nibble equal to b).
	Branches uint16
	// Children holds the inner node's child hashes, lowest branch first;
	// len(Children) is the number of bits set in Branches.
	Children []Hash

	// Key is the leaf's 256-bit key (its ledger entry's index).
	Key Hash
	// Payload is the leaf's entry: its canonical binary. It aliases the
	// slice given to Decode.
	Payload []byte
}

// Decode parses a node's serialized bytes. It checks the structure only; call
// Verify to check that data is the node a hash names. It never panics: any
// input that is not exactly a node's layout returns an error wrapping
// ErrMalformed. The returned Payload aliases data; Children is a fresh slice.
func Decode(data []byte) (Node, error) {
	if len(data) < prefixSize {
		return Node{}, fmt.Errorf("%w: %d bytes", ErrMalformed, len(data))
	}
	switch [4]byte(data[:prefixSize]) {
	case prefixInner:
		if len(data) != InnerSize {
			return Node{}, fmt.Errorf("%w: inner node of %d bytes, want %d", ErrMalformed, len(data), InnerSize)
		}
		var bitmap uint16
		n := 0
		for b := range 16 {
			if Hash(data[prefixSize+b*HashSize:]) != (Hash{}) {
				bitmap |= 1 << b
				n++
			}
		}
		if n == 0 {
			// Only an empty map has no children, and its root is the zero
			// hash, not a node.
			return Node{}, fmt.Errorf("%w: inner node without children", ErrMalformed)
		}
		children := make([]Hash, 0, n)
		for b := range 16 {
			if bitmap&(1<<b) != 0 {
				children = append(children, Hash(data[prefixSize+b*HashSize:]))
			}
		}
		return Node{Kind: Inner, Branches: bitmap, Children: children}, nil
	case prefixLeaf:
		if len(data) < leafOverhead {
			return Node{}, fmt.Errorf("%w: leaf of %d bytes", ErrMalformed, len(data))
		}
		end := len(data) - HashSize
		return Node{Kind: Leaf, Key: Hash(data[end:]), Payload: data[prefixSize:end:end]}, nil
	}
	return Node{}, fmt.Errorf("%w: unknown prefix %x", ErrMalformed, data[:prefixSize])
}

// appendInner appends the serialized inner node whose children are indexed
// by branch, the zero Hash on an empty branch.
func appendInner(dst []byte, children *[16]Hash) []byte {
	dst = append(dst, prefixInner[:]...)
	for b := range children {
		dst = append(dst, children[b][:]...)
	}
	return dst
}

// appendLeaf appends the serialized leaf for an entry with the given key and
// data.
func appendLeaf(dst []byte, key Hash, data []byte) []byte {
	dst = append(dst, prefixLeaf[:]...)
	dst = append(dst, data...)
	return append(dst, key[:]...)
}

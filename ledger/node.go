package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Serialized node layout. The first byte is a type tag and is hashed along
// with the rest, so the bytes of a leaf can never also decode as an inner node
// (or the other way round) under the same hash.
//
//	inner: 'I' | bitmap uint16 big-endian | one 32-byte child hash per set bit, lowest branch first
//	leaf:  'L' | key [32]byte | payload (any length, to the end)
const (
	tagInner = 'I'
	tagLeaf  = 'L'

	innerHeader = 1 + 2
	leafHeader  = 1 + HashSize

	// MaxNodeSize bounds the serialized size of any node Generate produces
	// (a leaf with the largest payload; a full inner node is 515 bytes).
	// Hosts can use it to size buffers and frame limits.
	MaxNodeSize = leafHeader + MaxPayload
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

	// Key is the leaf's 256-bit key.
	Key Hash
	// Payload is the leaf's content. It aliases the slice given to Decode.
	Payload []byte
}

// Decode parses a node's serialized bytes. It checks the structure only; call
// Verify to check that data is the node a hash names. It never panics: any
// input that is not exactly a node's layout returns an error wrapping
// ErrMalformed. The returned Payload aliases data; Children is a fresh slice.
func Decode(data []byte) (Node, error) {
	if len(data) == 0 {
		return Node{}, fmt.Errorf("%w: empty", ErrMalformed)
	}
	switch data[0] {
	case tagInner:
		if len(data) < innerHeader {
			return Node{}, fmt.Errorf("%w: inner node of %d bytes", ErrMalformed, len(data))
		}
		bitmap := binary.BigEndian.Uint16(data[1:3])
		if bitmap == 0 {
			return Node{}, fmt.Errorf("%w: inner node without children", ErrMalformed)
		}
		n := bits.OnesCount16(bitmap)
		if len(data) != innerHeader+n*HashSize {
			return Node{}, fmt.Errorf("%w: inner node with %d children has %d bytes", ErrMalformed, n, len(data))
		}
		children := make([]Hash, n)
		for i := range children {
			copy(children[i][:], data[innerHeader+i*HashSize:])
		}
		return Node{Kind: Inner, Branches: bitmap, Children: children}, nil
	case tagLeaf:
		if len(data) < leafHeader {
			return Node{}, fmt.Errorf("%w: leaf of %d bytes", ErrMalformed, len(data))
		}
		return Node{Kind: Leaf, Key: Hash(data[1:leafHeader]), Payload: data[leafHeader:]}, nil
	}
	return Node{}, fmt.Errorf("%w: unknown tag %#x", ErrMalformed, data[0])
}

// appendInner appends the serialized inner node with the given children
// (indexed by branch; only those with their bit set in bitmap are written).
func appendInner(dst []byte, bitmap uint16, children *[16]Hash) []byte {
	dst = append(dst, tagInner)
	dst = binary.BigEndian.AppendUint16(dst, bitmap)
	for b := range children {
		if bitmap&(1<<b) != 0 {
			dst = append(dst, children[b][:]...)
		}
	}
	return dst
}

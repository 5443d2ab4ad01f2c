package ledger

import (
	"crypto/sha512"
	"encoding/hex"
)

// HashSize is the size of a Hash in bytes.
const HashSize = 32

// Hash names a node: the SHA512Half of its serialized bytes (see HashOf). It
// is also the type of a leaf's key. The zero Hash names no node (finding a
// preimage for it is infeasible); it is the root of an empty map, and stands
// for "no hash" and for an empty branch of an inner node.
type Hash [HashSize]byte

// HashOf returns SHA512Half(data): the first 32 bytes of the plain SHA-512 of
// data, the XRP Ledger's hash of every node, ledger header and transaction.
// (It is not SHA-512/256, which starts from other initial values and gives
// other bytes.) A node's serialized bytes begin with its hash prefix, so the
// name of a node is the hash of exactly what a peer serves.
func HashOf(data []byte) Hash {
	sum := sha512.Sum512(data)
	return Hash(sum[:HashSize])
}

// Verify reports whether data is the node named h. A fetcher calls it on every
// object a peer sends before trusting (or decoding) it.
func Verify(h Hash, data []byte) bool {
	return HashOf(data) == h
}

// String returns the first 4 bytes in hex: enough to tell nodes apart in logs
// and transcripts. Note that fmt's %x verb also uses String; call Hex for the
// full form.
func (h Hash) String() string {
	return hex.EncodeToString(h[:4])
}

// Hex returns all 32 bytes in lower-case hex.
func (h Hash) Hex() string {
	return hex.EncodeToString(h[:])
}

// ParseHash parses 64 hex digits, in either case, as the XRP Ledger's tools
// print hashes.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*HashSize {
		return h, hex.ErrLength
	}
	_, err := hex.Decode(h[:], []byte(s))
	return h, err
}

// compareHash orders hashes as big-endian numbers, which is also the order of
// their nibble paths in the tree.
func compareHash(a, b Hash) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// nibble returns the i-th 4-bit digit of h, most significant first: the
// branch an inner node at depth i uses for the key h. i must be below 64.
func nibble(h Hash, i int) int {
	b := h[i/2]
	if i%2 == 0 {
		return int(b >> 4)
	}
	return int(b & 0x0f)
}

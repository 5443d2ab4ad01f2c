package ledger

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashSize is the size of a Hash in bytes.
const HashSize = sha256.Size

// Hash names a node: the SHA-256 of its serialized bytes. It is also the type
// of a leaf's key. The zero Hash names no node that Generate produces (finding
// a preimage for it is infeasible), so it can stand for "no hash".
type Hash [HashSize]byte

// HashOf returns the name of the node whose serialized bytes are data.
func HashOf(data []byte) Hash {
	return sha256.Sum256(data)
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

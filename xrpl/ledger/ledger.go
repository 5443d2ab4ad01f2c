// Package ledger models the data a fetch downloads: the XRP Ledger's state
// map, a content-addressed tree whose inner nodes have up to 16 children,
// chosen by successive nibbles of a leaf's 256-bit key, and whose leaves hold
// ledger entries. Every node is named by the SHA512Half of its serialized
// bytes, hash prefix included (see HashOf and Decode), exactly as rippled
// names and serves it, so a tree built here from a real ledger's entries has
// that ledger's account_hash as its root (see Build and Load), and Generate
// builds synthetic ones of any size under the same rules.
//
// A fetcher starts from Root, fetches each node by hash from a peer, checks it
// with Verify, decodes it with Decode and fetches the children of inner nodes.
// The package also defines the messages of that fetch (GetObjects and
// Objects), so simulated peers, the TCP codec and the fetcher share them.
package ledger

import (
	"encoding/binary"
	"iter"
	"math/bits"
	"slices"
)

// Ledger is a state map's tree, generated or built from entries. It is
// immutable once built and safe for concurrent use by any number of
// goroutines. The zero Ledger is empty: its root is the zero Hash, as an
// empty map's is, and Get finds nothing.
type Ledger struct {
	root   Hash
	leaves int
	size   int64
	// arena holds every node's bytes back to back (children before parents);
	// index, sorted by hash, says where each node sits in it. Two allocations
	// instead of one per node keep a 200,000-object ledger at some 80 MB
	// and out of the garbage collector's way.
	arena []byte
	index []span
	// buckets[p] is the first index entry whose hash starts with the
	// bucketBits-bit prefix p (and buckets[len-1] is len(index)). Hashes are
	// uniform, so this narrows a lookup to a handful of entries instead of a
	// binary search whose every step is a cache miss.
	buckets []uint32
}

// span locates one node's bytes in the arena.
type span struct {
	hash     Hash
	off, end uint32
}

// Root returns the hash of the root node, which is an inner node, or the zero
// Hash for an empty map.
func (l *Ledger) Root() Hash { return l.root }

// Len returns the number of nodes, inner and leaves: what a full fetch must
// download.
func (l *Ledger) Len() int { return len(l.index) }

// Leaves returns the number of leaves: the map's entries.
func (l *Ledger) Leaves() int { return l.leaves }

// Size returns the total number of serialized bytes of all nodes.
func (l *Ledger) Size() int64 { return l.size }

// Get returns the serialized bytes of the node named h, and whether the ledger
// has it. The bytes are shared by every caller and must not be modified; the
// returned slice's capacity ends with the node, so appending to it copies.
func (l *Ledger) Get(h Hash) ([]byte, bool) {
	if len(l.index) == 0 {
		return nil, false
	}
	p := prefix(h, bucketBitsFor(len(l.index)))
	bucket := l.index[l.buckets[p]:l.buckets[p+1]]
	i, ok := slices.BinarySearchFunc(bucket, h, func(s span, h Hash) int {
		return compareHash(s.hash, h)
	})
	if !ok {
		return nil, false
	}
	s := bucket[i]
	return l.arena[s.off:s.end:s.end], true
}

// bucketBitsFor returns how many leading bits of a hash pick its bucket, for
// an index of n entries: about two entries per bucket, at most 2^20 buckets.
func bucketBitsFor(n int) int {
	return min(bits.Len(uint(n/2)), 20)
}

// prefix returns the first b bits of h (b at most 32).
func prefix(h Hash, b int) uint32 {
	return uint32(uint64(binary.BigEndian.Uint32(h[:4])) >> (32 - b))
}

// bucketize builds the bucket table for an index sorted by hash.
func bucketize(index []span) []uint32 {
	b := bucketBitsFor(len(index))
	buckets := make([]uint32, 1<<b+1)
	p := uint32(0)
	for i, s := range index {
		for q := prefix(s.hash, b); p <= q; p++ {
			buckets[p] = uint32(i)
		}
	}
	for ; int(p) < len(buckets); p++ {
		buckets[p] = uint32(len(index))
	}
	return buckets
}

// Hashes returns an iterator over the hash of every node, in ascending hash
// order.
func (l *Ledger) Hashes() iter.Seq[Hash] {
	return func(yield func(Hash) bool) {
		for _, s := range l.index {
			if !yield(s.hash) {
				return
			}
		}
	}
}

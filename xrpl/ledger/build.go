package ledger

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Entry is one ledger entry of a state map: its 256-bit key (the entry's
// index) and its canonical binary, which the leaf holding it serializes.
type Entry struct {
	Key  Hash
	Data []byte
}

// ErrDuplicateKey is returned by Build for two entries with the same key.
var ErrDuplicateKey = errors.New("ledger: duplicate key")

// errTooLarge: the nodes' bytes would not fit the arena's 32-bit offsets.
var errTooLarge = errors.New("ledger: nodes above 4 GiB")

// Build builds the state map that holds entries, given in any order, and
// hashes it as the XRP Ledger does, so its Root is the account_hash of a
// ledger with this state. Data is copied. An empty map has the zero root and
// no nodes. Otherwise the root is an inner node (even for one entry); below
// it, each leaf sits at the shallowest depth where no other key shares its
// nibble path, and inner nodes appear only where two or more keys share one,
// so an inner node below the root may have a single child, when all its keys
// share the next nibble too.
//
// It fails with an error wrapping ErrDuplicateKey if two entries share a
// key, and with an error if its nodes would come to more than 4 GiB.
func Build(entries []Entry) (*Ledger, error) {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b Entry) int { return compareHash(a.Key, b.Key) })
	keys := make([]Hash, len(sorted))
	size := 0
	for i, e := range sorted {
		keys[i] = e.Key
		size += len(e.Data)
	}
	return build(keys, size, func(dst []byte, i int) []byte { return append(dst, sorted[i].Data...) })
}

// build builds the map of keys (sorted, ascending) whose i-th entry's data
// appendData appends to dst; dataSize is (an estimate of) the data's total
// size, to allocate the arena once. appendData is called once per key, in
// key order, which lets Generate draw the data as it goes.
func build(keys []Hash, dataSize int, appendData func(dst []byte, i int) []byte) (*Ledger, error) {
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			return nil, fmt.Errorf("%w: %s", ErrDuplicateKey, keys[i].Hex())
		}
	}
	if len(keys) == 0 {
		return &Ledger{}, nil
	}
	// A 16-way trie of n random keys has about n/ln(16) (0.36n) inner
	// nodes; the estimate lets the two big slices be allocated once.
	inner := len(keys)*2/5 + 16
	b := builder{
		keys:       keys,
		appendData: appendData,
		arena:      make([]byte, 0, dataSize+len(keys)*leafOverhead+inner*InnerSize),
		index:      make([]span, 0, len(keys)+inner),
	}
	root := b.inner(0, len(keys), 0)
	if len(b.arena) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d bytes", errTooLarge, len(b.arena))
	}
	slices.SortFunc(b.index, func(x, y span) int { return compareHash(x.hash, y.hash) })
	return &Ledger{
		root:    root,
		leaves:  len(keys),
		size:    int64(len(b.arena)),
		arena:   b.arena,
		index:   b.index,
		buckets: bucketize(b.index),
	}, nil
}

// builder lays nodes into one arena, children first, as it names them.
type builder struct {
	keys       []Hash
	appendData func(dst []byte, i int) []byte
	arena      []byte
	index      []span
}

// inner builds the inner node at depth whose subtree holds keys[lo:hi]
// (distinct; at least two unless depth is 0) and returns its hash.
func (b *builder) inner(lo, hi, depth int) Hash {
	var children [16]Hash
	for i := lo; i < hi; {
		branch := nibble(b.keys[i], depth)
		j := i + 1
		for j < hi && nibble(b.keys[j], depth) == branch {
			j++
		}
		if j-i == 1 {
			children[branch] = b.leaf(i)
		} else {
			// Distinct keys differ within 64 nibbles, so depth+1 stays in range.
			children[branch] = b.inner(i, j, depth+1)
		}
		i = j
	}
	off := len(b.arena)
	b.arena = appendInner(b.arena, &children)
	return b.seal(off)
}

// leaf builds the leaf of the i-th key and returns its hash.
func (b *builder) leaf(i int) Hash {
	off := len(b.arena)
	b.arena = append(b.arena, prefixLeaf[:]...)
	b.arena = b.appendData(b.arena, i)
	b.arena = append(b.arena, b.keys[i][:]...)
	return b.seal(off)
}

// seal names the node that occupies the arena from off to its end. Offsets
// past 4 GiB wrap here; build refuses such a ledger before anyone reads them.
func (b *builder) seal(off int) Hash {
	end := len(b.arena)
	h := HashOf(b.arena[off:end])
	b.index = append(b.index, span{hash: h, off: uint32(off), end: uint32(end)})
	return h
}

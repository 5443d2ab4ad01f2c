package ledger

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Bounds of generated ledgers.
const (
	// MinPayload and MaxPayload bound a generated leaf's payload size in
	// bytes; sizes are drawn uniformly between them, inclusive.
	MinPayload = 40
	MaxPayload = 300

	// MaxObjects is the largest object count Generate accepts. It keeps every
	// node's offset within 32 bits (8M leaves of at most 333 bytes, plus their
	// inner nodes, stay under 4 GiB) and a typo from allocating the machine.
	MaxObjects = 1 << 23
)

// ErrObjects is returned by Generate for an object count below 1 or above
// MaxObjects.
var ErrObjects = errors.New("ledger: object count out of range")

// pcgStream is the second PCG word. Fixed, so that a ledger depends on the
// seed alone; it is not zero so that seed 0 is as good as any other.
const pcgStream = 0x6c656467_65727631 // "ledgerv1"

// Generate builds a ledger of the given number of leaves, deterministically
// from seed: the same (seed, objects) always yields the same tree and root on
// every platform, and different seeds yield unrelated trees. Keys are uniform
// 256-bit values, payloads uniform in [MinPayload, MaxPayload] bytes of random
// content, all drawn from a PCG source seeded with seed.
//
// The root is always an inner node, even for one object. Below it, a leaf
// sits at the shallowest depth where no other key shares its nibble path;
// inner nodes appear only where two or more keys share one (so an inner node
// below the root may have a single child, when all its keys share the next
// nibble too).
//
// It returns an error wrapping ErrObjects if objects is out of range.
func Generate(seed uint64, objects int) (*Ledger, error) {
	if objects < 1 || objects > MaxObjects {
		return nil, fmt.Errorf("%w: %d (want 1 to %d)", ErrObjects, objects, MaxObjects)
	}
	rng := rand.New(rand.NewPCG(seed, pcgStream))

	keys := make([]Hash, objects)
	for i := range keys {
		fillRandom(rng, keys[i][:])
	}
	slices.SortFunc(keys, compareHash)
	for i := 1; i < len(keys); i++ {
		if keys[i] == keys[i-1] {
			// Two equal 256-bit draws among millions: about 2^-210. Saying so
			// beats building a tree with a leaf missing.
			return nil, fmt.Errorf("ledger: seed %d drew key %s twice", seed, keys[i].Hex())
		}
	}

	// Estimates, so the two big slices are allocated once: a 16-way trie of
	// n random keys has about n/ln(16) (0.36n) inner nodes, every node but the
	// root costs its parent 32 bytes, and payloads average the middle of
	// their range.
	inner := objects*2/5 + 16
	nodes := objects + inner
	b := builder{
		rng:   rng,
		arena: make([]byte, 0, objects*(leafHeader+(MinPayload+MaxPayload)/2)+inner*innerHeader+nodes*HashSize),
		index: make([]span, 0, nodes),
	}
	root := b.inner(keys, 0)
	slices.SortFunc(b.index, func(x, y span) int { return compareHash(x.hash, y.hash) })
	return &Ledger{
		root:    root,
		leaves:  objects,
		size:    int64(len(b.arena)),
		arena:   b.arena,
		index:   b.index,
		buckets: bucketize(b.index),
	}, nil
}

// builder lays nodes into one arena, children first, as it names them.
type builder struct {
	rng   *rand.Rand
	arena []byte
	index []span
}

// inner builds the inner node at depth whose subtree holds keys (sorted,
// distinct; at least two unless depth is 0) and returns its hash.
func (b *builder) inner(keys []Hash, depth int) Hash {
	var children [16]Hash
	var bitmap uint16
	for i := 0; i < len(keys); {
		branch := nibble(keys[i], depth)
		j := i + 1
		for j < len(keys) && nibble(keys[j], depth) == branch {
			j++
		}
		if j-i == 1 {
			children[branch] = b.leaf(keys[i])
		} else {
			// Distinct keys differ within 64 nibbles, so depth+1 stays in range.
			children[branch] = b.inner(keys[i:j], depth+1)
		}
		bitmap |= 1 << branch
		i = j
	}
	off := len(b.arena)
	b.arena = appendInner(b.arena, bitmap, &children)
	return b.seal(off)
}

// leaf builds the leaf for key, drawing its payload, and returns its hash.
func (b *builder) leaf(key Hash) Hash {
	off := len(b.arena)
	n := MinPayload + b.rng.IntN(MaxPayload-MinPayload+1)
	b.arena = append(b.arena, tagLeaf)
	b.arena = append(b.arena, key[:]...)
	b.arena = slices.Grow(b.arena, n)[:len(b.arena)+n]
	fillRandom(b.rng, b.arena[len(b.arena)-n:])
	return b.seal(off)
}

// seal names the node that occupies the arena from off to its end.
func (b *builder) seal(off int) Hash {
	end := len(b.arena)
	h := HashOf(b.arena[off:end])
	b.index = append(b.index, span{hash: h, off: uint32(off), end: uint32(end)})
	return h
}

// fillRandom fills p with bytes from rng, eight at a time, little-endian so
// the result is the same on every platform.
func fillRandom(rng *rand.Rand, p []byte) {
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, rng.Uint64())
		p = p[8:]
	}
	if len(p) > 0 {
		var tail [8]byte
		binary.LittleEndian.PutUint64(tail[:], rng.Uint64())
		copy(p, tail[:])
	}
}

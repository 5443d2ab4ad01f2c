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
	// MinPayload and MaxPayload bound a generated entry's size in bytes:
	// the smallest and largest entries of the real ledgers the sizes were
	// measured on (see entrySizes).
	MinPayload = 87
	MaxPayload = 8216

	// MaxObjects is the largest object count Generate accepts. At the
	// measured mean entry size, 8M entries and their inner nodes take about
	// 3.4 GB, within the arena's 32-bit offsets; and it keeps a typo from
	// allocating the machine.
	MaxObjects = 1 << 23
)

// entrySizes is the distribution Generate draws entry sizes from, measured
// on the state of the two real mainnet ledgers (38129 and 40000, 261 entries
// each, the same histogram in both; TestEntrySizesMeasured checks it against
// them): each size with the number of entries of that size. Account roots
// (87 bytes) are half of them, offers and trust lines (130 to 258 bytes) most
// of the rest, and about one in 130 is a skip list of ledger hashes of
// several KB, whose size Generate draws uniformly from the range seen.
var entrySizes = []struct{ size, count int }{
	{87, 137}, {98, 23}, {116, 1}, {130, 14}, {148, 18}, {173, 4}, {183, 2},
	{193, 36}, {194, 2}, {211, 17}, {223, 3}, {258, 2},
	{largeEntry, 2},
}

// largeEntry stands in entrySizes for a size drawn uniformly from
// [largeMin, MaxPayload]: the skip lists seen were 4,760, 5,016 and 8,216
// bytes.
const (
	largeEntry = -1
	largeMin   = 4760
)

// entrySizeTotal is the sum of entrySizes' counts.
var entrySizeTotal = func() int {
	n := 0
	for _, c := range entrySizes {
		n += c.count
	}
	return n
}()

// drawEntrySize draws an entry size from entrySizes.
func drawEntrySize(rng *rand.Rand) int {
	u := rng.IntN(entrySizeTotal)
	for _, c := range entrySizes {
		if u < c.count {
			if c.size == largeEntry {
				return largeMin + rng.IntN(MaxPayload-largeMin+1)
			}
			return c.size
		}
		u -= c.count
	}
	panic("unreachable: u is below the total")
}

// meanEntrySize is the mean of entrySizes, to size the arena.
var meanEntrySize = func() int {
	sum := 0
	for _, c := range entrySizes {
		size := c.size
		if size == largeEntry {
			size = (largeMin + MaxPayload) / 2
		}
		sum += size * c.count
	}
	return sum / entrySizeTotal
}()

// ErrObjects is returned by Generate for an object count below 1 or above
// MaxObjects.
var ErrObjects = errors.New("ledger: object count out of range")

// pcgStream is the second PCG word. Fixed, so that a ledger depends on the
// seed alone; it is not zero so that seed 0 is as good as any other.
const pcgStream = 0x6c656467_65727631 // "ledgerv1"

// Generate builds a ledger of the given number of entries, deterministically
// from seed: the same (seed, objects) always yields the same tree and root on
// every platform, and different seeds yield unrelated trees. Keys are uniform
// 256-bit values and entries random bytes whose sizes follow the real
// ledgers' (see entrySizes), all drawn from a PCG source seeded with seed.
// The tree is shaped and hashed as Build does, like the XRP Ledger's state
// map; the root is always an inner node.
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
	l, err := build(keys, objects*meanEntrySize, func(dst []byte, _ int) []byte {
		n := drawEntrySize(rng)
		dst = slices.Grow(dst, n)[:len(dst)+n]
		fillRandom(rng, dst[len(dst)-n:])
		return dst
	})
	if errors.Is(err, ErrDuplicateKey) {
		// Two equal 256-bit draws among millions: about 2^-210. Saying so
		// beats building a tree with a leaf missing.
		return nil, fmt.Errorf("ledger: seed %d drew a key twice: %w", seed, err)
	}
	return l, err
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

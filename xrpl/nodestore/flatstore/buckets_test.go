package flatstore

import (
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// TestBucketBits: the fewest buckets that keep their average at most
// perBucket nodes, up to 2^maxBucketBits.
func TestBucketBits(t *testing.T) {
	for _, c := range []struct {
		count uint64
		bits  uint
	}{
		{0, 0}, {1, 0}, {8, 0}, {9, 1}, {16, 1}, {17, 2}, {32, 2}, {33, 3},
		{275_369, 16},    // 200k entries: 4.2 a bucket
		{1_359_579, 18},  // 1M: 5.2
		{5_446_493, 20},  // 4M: 5.2
		{26_053_013, 22}, // 19M: 6.2, a table of 32 MiB
		{1 << 27, 24},    // 8 a bucket at the cap
		{1<<27 + 1, 24},  // past it, the buckets grow
		{1 << 40, 24},
	} {
		if got := bucketBits(c.count); got != c.bits {
			t.Errorf("bucketBits(%d) = %d, want %d", c.count, got, c.bits)
		}
	}
}

// TestBucketOf: a hash's bucket is its top bits, so buckets follow the
// hashes' order.
func TestBucketOf(t *testing.T) {
	hash := func(prefix ...byte) ledger.Hash {
		var h ledger.Hash
		copy(h[:], prefix)
		for i := len(prefix); i < len(h); i++ {
			h[i] = 0xff // bits past the prefix never count
		}
		return h
	}
	for _, c := range []struct {
		h    ledger.Hash
		bits uint
		want uint64
	}{
		{hash(0xff), 0, 0},
		{hash(0x7f), 1, 0},
		{hash(0x80), 1, 1},
		{hash(0x00, 0x00), 8, 0xff >> 8},
		{hash(0xab, 0xcd), 8, 0xab},
		{hash(0xab, 0xcd), 16, 0xabcd},
		{hash(0x00, 0x00, 0x04), 22, 1},
		{hash(0xff, 0xff, 0xfc), 22, 1<<22 - 1},
		{hash(0x12, 0x34, 0x56), 24, 0x123456},
	} {
		if got := bucketOf(c.h, c.bits); got != c.want {
			t.Errorf("bucketOf(%x, %d) = %#x, want %#x", c.h[:4], c.bits, got, c.want)
		}
	}
}

// TestTableBytes: an offset for each bucket and one for the data's end.
func TestTableBytes(t *testing.T) {
	for _, c := range []struct {
		bits uint
		want int64
	}{{0, 16}, {1, 24}, {16, 524_296}, {22, 33_554_440}} {
		if got := tableBytes(c.bits); got != c.want {
			t.Errorf("tableBytes(%d) = %d, want %d", c.bits, got, c.want)
		}
	}
}

package flatstore

import (
	"encoding/binary"

	"github.com/peersched/peersched/xrpl/ledger"
)

// The number of buckets is chosen from the count of nodes expected: as few
// as keep a bucket's average at most perBucket nodes (about 2 KiB read a
// lookup, with nodes of 300 bytes on average), and at most 2^maxBucketBits
// (a table of 128 MiB in memory), so that the table's memory stays bounded
// whatever the count; past 2^27 nodes the buckets grow instead.
const (
	perBucket     = 8
	maxBucketBits = 24
)

// bucketBits returns the bits of the hash that pick a bucket for a file of
// count nodes (see perBucket).
func bucketBits(count uint64) uint {
	bits := uint(0)
	for bits < maxBucketBits && count > perBucket<<bits {
		bits++
	}
	return bits
}

// bucketOf returns the bucket of h in a file of 2^bits buckets: the top
// bits of the hash, so that buckets are contiguous in the hashes' order.
// With no bits the shift is by 64, which Go defines as giving 0: one
// bucket.
func bucketOf(h ledger.Hash, bits uint) uint64 {
	return binary.BigEndian.Uint64(h[:8]) >> (64 - bits)
}

// tableBytes is the size of the table of a file of 2^bits buckets: one
// offset for each bucket's start and one for the end of the data.
func tableBytes(bits uint) int64 { return (int64(1)<<bits + 1) * 8 }

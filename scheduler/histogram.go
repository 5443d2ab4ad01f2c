package scheduler

import (
	"math/bits"
	"time"
)

// Response times are counted in fixed buckets whose bounds double from one
// to the next, so that a Histogram maps one to one onto a Prometheus
// histogram (bounds as its "le" labels, cumulative counts, a count and a sum)
// and one observation costs an integer division by a constant and a bit
// length, under a lock the scheduler holds anyway: no floating point, no
// search.

// HistogramBuckets is the number of finite buckets of a Histogram.
const HistogramBuckets = 21

// histogramBase is the bound of the first bucket: 62.5µs, so that the
// bounds pass through 1ms (bucket 4) and reach 65.536s (bucket 20).
const histogramBase = time.Millisecond / 16

// HistogramBounds returns the upper bounds of a Histogram's buckets: bucket
// i's is 62.5µs·2^i, that is 62.5µs, 125µs, 250µs, 500µs, 1ms, 2ms, 4ms, and
// so on up to 65.536s. Bucket i holds the times above bucket i-1's bound
// and at most its own; times above the last bound are counted only in
// Histogram.Count (the +Inf bucket).
func HistogramBounds() [HistogramBuckets]time.Duration {
	var b [HistogramBuckets]time.Duration
	for i := range b {
		b[i] = histogramBase << i
	}
	return b
}

// Histogram is a snapshot of a distribution of response times, laid out as
// a Prometheus histogram is. A Histogram is a plain value: the scheduler
// hands out copies.
type Histogram struct {
	// Cumulative[i] is how many response times were at most
	// HistogramBounds()[i].
	Cumulative [HistogramBuckets]uint64
	// Count is how many response times there were in all: the +Inf bucket.
	Count uint64
	// Sum is their total.
	Sum time.Duration
}

// bucketOf returns the bucket a response time d falls in: the first i with
// d <= HistogramBounds()[i], or HistogramBuckets when d is above them all.
// A time at or below zero (which a clock that does not move can give)
// falls in bucket 0.
//
// It runs for every answered request, so it has no branch: max and min
// compile to conditional moves, and the division by a constant to a
// multiplication.
func bucketOf(d time.Duration) int {
	// (d-1)/base is below 2^i exactly when d <= base·2^i, so its bit
	// length is the first bucket that holds d; at or below base, and at
	// or below zero, it is 0.
	return min(bits.Len64(uint64(max(d, 1)-1)/uint64(histogramBase)), HistogramBuckets)
}

// histogramCounts is the scheduler's running form of a Histogram: one count
// per bucket (the last for the times above every bound), not cumulative, so
// that an observation is one increment. It is not safe for concurrent use;
// its owner guards it.
//
// It has room for 32 buckets, a power of two, so that an observation's
// index is masked rather than bounds-checked, without a branch; the ones
// past HistogramBuckets stay zero.
type histogramCounts struct {
	buckets [32]uint64
	sum     time.Duration
}

// observe counts one response time. (The scheduler, which counts each in
// two histograms, works out its bucket once instead: see
// messageCounts.answered.)
func (h *histogramCounts) observe(d time.Duration) {
	h.buckets[bucketOf(d)&(len(h.buckets)-1)]++
	h.sum += d
}

// add adds o's counts to h.
func (h *histogramCounts) add(o *histogramCounts) {
	for i := range h.buckets {
		h.buckets[i] += o.buckets[i]
	}
	h.sum += o.sum
}

// snapshot returns h as a Histogram.
func (h *histogramCounts) snapshot() Histogram {
	var out Histogram
	var total uint64
	for i := range HistogramBuckets {
		total += h.buckets[i]
		out.Cumulative[i] = total
	}
	out.Count = total + h.buckets[HistogramBuckets]
	out.Sum = h.sum
	return out
}

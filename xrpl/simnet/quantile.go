package simnet

import (
	"math"
	"slices"
	"time"
)

// Quantile returns the q-quantile of ds by the nearest-rank method: the
// smallest value that at least a fraction q of ds is at or below. q is
// clamped to [0, 1]; Quantile(ds, 0) is the minimum and Quantile(ds, 1) the
// maximum. It returns 0 for an empty ds, and leaves ds as it was. (q·n is
// taken to nine significant digits, so that 0.07 of 100 values is the 7th
// and not the 8th, as floating point would have it.)
//
// Experiments use it on Peer.QueueDelays for p50 and p99 queueing delay.
func Quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if !(q > 0) { // also NaN
		return s[0]
	}
	// q·n in floating point can land a hair above the integer it means
	// (0.07·100 is 7.000000000000001): forgive a relative 1e-9.
	x := min(q, 1) * float64(len(s))
	rank := int(math.Ceil(x - x*1e-9))
	return s[min(max(rank, 1), len(s))-1]
}

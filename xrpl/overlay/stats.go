package overlay

import (
	"math"
	"time"
)

// timeToShare returns when a share p (in (0, 1]) of total nodes had
// completed, given the completion times of those that did, sorted: the
// nearest-rank time of the ceil(p·total)-th completion. It is false when
// fewer than that many completed.
func timeToShare(sorted []time.Duration, total int, p float64) (time.Duration, bool) {
	if total <= 0 {
		return 0, false
	}
	k := max(int(math.Ceil(p*float64(total)-1e-9)), 1)
	if k > len(sorted) {
		return 0, false
	}
	return sorted[k-1], true
}

// jainIndex returns Jain's fairness index of xs, (Σx)² / (n·Σx²): 1 when all
// are equal, down to 1/n when one holds everything. It is 1 for an empty
// list or all zeros, where nothing is unequal.
func jainIndex(xs []float64) float64 {
	var sum, squares float64
	for _, x := range xs {
		sum += x
		squares += x * x
	}
	if squares == 0 {
		return 1
	}
	return sum * sum / (float64(len(xs)) * squares)
}

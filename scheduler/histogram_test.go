package scheduler

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestHistogramBounds(t *testing.T) {
	b := HistogramBounds()
	require.Equal(t, 62500*time.Nanosecond, b[0])
	require.Equal(t, time.Millisecond, b[4])
	require.Equal(t, 65536*time.Millisecond, b[HistogramBuckets-1])
	for i := 1; i < HistogramBuckets; i++ {
		require.Equal(t, 2*b[i-1], b[i], "bound %d", i)
	}
}

// TestBucketOf checks the bucket arithmetic at and around every kind of
// edge: a time at a bound falls in that bound's bucket, one nanosecond more
// in the next.
func TestBucketOf(t *testing.T) {
	const us = time.Microsecond
	for _, tc := range []struct {
		d    time.Duration
		want int
	}{
		{math.MinInt64, 0},
		{-time.Second, 0},
		{0, 0},
		{1, 0},
		{62500, 0},
		{62501, 1},
		{125 * us, 1},
		{125*us + 1, 2},
		{250 * us, 2},
		{300 * us, 3},
		{500 * us, 3},
		{time.Millisecond - 1, 4},
		{time.Millisecond, 4},
		{time.Millisecond + 1, 5},
		{2 * time.Millisecond, 5},
		{3 * time.Millisecond, 6},
		{4 * time.Millisecond, 6},
		{time.Second, 14}, // 1.024s is bucket 14's bound
		{1024 * time.Millisecond, 14},
		{1024*time.Millisecond + 1, 15},
		{65536 * time.Millisecond, 20},
		{65536*time.Millisecond + 1, HistogramBuckets}, // above every bound: +Inf only
		{time.Hour, HistogramBuckets},
		{math.MaxInt64, HistogramBuckets},
	} {
		require.Equal(t, tc.want, bucketOf(tc.d), "bucketOf(%v)", tc.d)
	}
	// Against the definition, around every bound.
	bounds := HistogramBounds()
	for i, b := range bounds {
		for _, d := range []time.Duration{b - 1, b, b + 1} {
			want := HistogramBuckets
			for j, bj := range bounds {
				if d <= bj {
					want = j
					break
				}
			}
			require.Equal(t, want, bucketOf(d), "bucketOf(%v), next to bound %d", d, i)
		}
	}
}

func TestHistogramSnapshot(t *testing.T) {
	var h histogramCounts
	for _, d := range []time.Duration{0, time.Millisecond, time.Millisecond, 3 * time.Millisecond, time.Hour} {
		h.observe(d)
	}
	got := h.snapshot()
	want := Histogram{Count: 5, Sum: time.Hour + 5*time.Millisecond}
	for i := range want.Cumulative {
		switch {
		case i < 4:
			want.Cumulative[i] = 1 // the 0
		case i < 6:
			want.Cumulative[i] = 3 // and the two 1ms
		default:
			want.Cumulative[i] = 4 // and the 3ms; the hour is only in Count
		}
	}
	require.Equal(t, want, got)

	var sum histogramCounts
	sum.add(&h)
	sum.add(&h)
	doubled := sum.snapshot()
	for i := range want.Cumulative {
		want.Cumulative[i] *= 2
	}
	want.Count, want.Sum = 2*want.Count, 2*want.Sum
	require.Equal(t, want, doubled)
}

package simnet

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestQuantile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(100 - i) // 100 down to 1: Quantile sorts
	}
	four := []time.Duration{40, 10, 30, 20}
	for _, c := range []struct {
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{[]time.Duration{7}, 0, 7},
		{[]time.Duration{7}, 0.99, 7},
		{four, 0, 10},
		{four, 0.25, 10},
		{four, 0.26, 20},
		{four, 0.5, 20},
		{four, 0.51, 30},
		{four, 0.75, 30},
		{four, 1, 40},
		{four, 2, 40},
		{four, -1, 10},
		{four, math.NaN(), 10},
		{hundred, 0.5, 50},
		{hundred, 0.07, 7}, // not 8
		{hundred, 0.99, 99},
		{hundred, 0.999, 100},
		{hundred, 0.001, 1},
	} {
		before := slices.Clone(c.ds)
		if got := Quantile(c.ds, c.q); got != c.want {
			t.Errorf("Quantile(%d values, %v) = %v, want %v", len(c.ds), c.q, got, c.want)
		}
		if !slices.Equal(before, c.ds) {
			t.Errorf("Quantile changed its input")
		}
	}
}

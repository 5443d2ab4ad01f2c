package overlay

import (
	"math"
	"testing"
	"time"
)

func TestTimeToShare(t *testing.T) {
	s := time.Second
	four := []time.Duration{1 * s, 2 * s, 3 * s, 4 * s}
	for _, c := range []struct {
		name   string
		sorted []time.Duration
		total  int
		p      float64
		want   time.Duration
		ok     bool
	}{
		{"half of four is the second", four, 4, 0.5, 2 * s, true},
		{"99% of four needs all four", four, 4, 0.99, 4 * s, true},
		{"all of four", four, 4, 1, 4 * s, true},
		{"a quarter is the first", four, 4, 0.25, 1 * s, true},
		{"a little is the first", four, 4, 0.01, 1 * s, true},
		{"half of five needs three", four, 5, 0.5, 3 * s, true},
		{"all of five: one never completed", four, 5, 1, 0, false},
		{"99% of 100 is the 99th", ramp(100), 100, 0.99, 99 * s, true},
		{"99% of 101 needs 100 (ceil 99.99)", ramp(100), 101, 0.99, 100 * s, true},
		{"50% of 1000 is the 500th, no float noise", ramp(1000), 1000, 0.5, 500 * s, true},
		{"none completed", nil, 3, 0.5, 0, false},
		{"no nodes", nil, 0, 0.5, 0, false},
	} {
		got, ok := timeToShare(c.sorted, c.total, c.p)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: timeToShare(p=%v, total %d) = %v, %v; want %v, %v", c.name, c.p, c.total, got, ok, c.want, c.ok)
		}
	}
}

// ramp returns 1s, 2s, ..., n seconds.
func ramp(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * time.Second
	}
	return out
}

func TestJainIndex(t *testing.T) {
	for _, c := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"all equal", []float64{3, 3, 3, 3}, 1},
		{"one of four takes all", []float64{0, 0, 0, 8}, 0.25},
		{"two of four share", []float64{5, 5, 0, 0}, 0.5},
		{"1 and 3", []float64{1, 3}, 16.0 / 20}, // (1+3)² / (2·(1+9))
		{"1, 2, 3", []float64{1, 2, 3}, 36.0 / 42},
		{"one value", []float64{7}, 1},
		{"empty", nil, 1},
		{"all zero", []float64{0, 0}, 1},
	} {
		if got := jainIndex(c.xs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: jainIndex(%v) = %v, want %v", c.name, c.xs, got, c.want)
		}
	}
}

func TestHoldings(t *testing.T) {
	h := newHoldings(130)
	if len(h) != 3 || h.count() != 0 {
		t.Fatalf("130 bits in %d words holding %d", len(h), h.count())
	}
	for _, i := range []int32{0, 63, 64, 129} {
		if !h.add(i) || !h.has(i) {
			t.Errorf("add(%d) on a fresh bit", i)
		}
		if h.add(i) {
			t.Errorf("add(%d) twice reports new", i)
		}
	}
	if h.has(1) || h.has(128) || h.count() != 4 {
		t.Errorf("holds 1: %v, 128: %v, count %d; want false, false, 4", h.has(1), h.has(128), h.count())
	}
	g := newHoldings(130)
	g.fill(130)
	if g.count() != 130 || !g.has(129) {
		t.Errorf("fill(130) holds %d", g.count())
	}
}

package simnet

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestSampleFixed(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range []time.Duration{0, time.Nanosecond, 42 * time.Millisecond} {
		for range 10 {
			if got := Fixed(d).Sample(r); got != d {
				t.Fatalf("Fixed(%v) sampled %v", d, got)
			}
		}
	}
	var zero Latency
	if got := zero.Sample(r); got != 0 {
		t.Fatalf("zero Latency sampled %v", got)
	}
}

func TestSampleUniformInclusive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[time.Duration]int{}
	for range 1000 {
		seen[Uniform(5, 7).Sample(r)]++
	}
	if len(seen) != 3 || seen[5] == 0 || seen[7] == 0 {
		t.Fatalf("Uniform(5ns, 7ns) drew %v; want 5, 6 and 7 only and all of them", seen)
	}
	if got := Uniform(time.Second, time.Second).Sample(r); got != time.Second {
		t.Fatalf("degenerate uniform drew %v", got)
	}
}

func TestSampleLogNormalShape(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const median = 10 * time.Millisecond
	ds := make([]time.Duration, 10000)
	for i := range ds {
		ds[i] = LogNormal(median, 1).Sample(r)
	}
	slices.Sort(ds)
	mid, p999 := ds[len(ds)/2], ds[len(ds)*999/1000]
	if mid < 9*time.Millisecond || mid > 11*time.Millisecond {
		t.Errorf("sample median %v, want about %v", mid, median)
	}
	// e^(3.09) ≈ 22: a heavy tail puts the 99.9th percentile far out.
	if p999 < 15*median {
		t.Errorf("99.9th percentile %v; a log-normal tail with sigma 1 reaches ~22x the median", p999)
	}
	if ds[0] <= 0 {
		t.Errorf("non-positive draw %v", ds[0])
	}
	if got := LogNormal(time.Minute, 50).Sample(r); got > MaxLatency {
		t.Errorf("draw %v above MaxLatency", got)
	}
	if got := LogNormal(median, 0).Sample(r); got != median {
		t.Errorf("sigma 0 drew %v, want the median", got)
	}
}

func TestLatencyValidate(t *testing.T) {
	for _, l := range []Latency{Fixed(0), Fixed(time.Second), Uniform(0, 0), Uniform(1, 2), LogNormal(1, 0), LogNormal(time.Millisecond, 2)} {
		if err := l.validate(); err != nil {
			t.Errorf("%v: %v", l, err)
		}
	}
	for _, l := range []Latency{Fixed(-1), Uniform(-1, 2), Uniform(3, 2), LogNormal(0, 1), LogNormal(1, -1), {kind: 9}} {
		if err := l.validate(); err == nil {
			t.Errorf("%v: no error", l)
		}
	}
}

func TestLatencyString(t *testing.T) {
	for l, want := range map[Latency]string{
		Fixed(time.Millisecond):     "fixed(1ms)",
		Uniform(1, 2):               "uniform(1ns, 2ns)",
		LogNormal(time.Second, 0.5): "lognormal(median 1s, sigma 0.5)",
		{kind: 7}:                   "latency(kind 7)",
	} {
		if got := l.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

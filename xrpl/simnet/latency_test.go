package simnet

import (
	"math"
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
	for _, l := range []Latency{Fixed(0), Fixed(time.Second), Uniform(0, 0), Uniform(1, 2), LogNormal(1, 0), LogNormal(time.Millisecond, 2),
		Fixed(1).WithStragglers(0.01, 50), Fixed(1).WithStragglers(1, 1), Fixed(1).WithStragglers(0, 0)} {
		if err := l.validate(); err != nil {
			t.Errorf("%v: %v", l, err)
		}
	}
	for _, l := range []Latency{Fixed(-1), Uniform(-1, 2), Uniform(3, 2), LogNormal(0, 1), LogNormal(1, -1), {kind: 9},
		Fixed(1).WithStragglers(-0.1, 50), Fixed(1).WithStragglers(1.5, 50), Fixed(1).WithStragglers(math.NaN(), 50),
		Fixed(1).WithStragglers(0.01, 0.5), Fixed(1).WithStragglers(0.01, math.Inf(1)), Fixed(1).WithStragglers(0.01, math.NaN()),
		Fixed(-1).WithStragglers(0.01, 50)} {
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
		LogNormal(20*time.Millisecond, 0.5).WithStragglers(0.01, 50): "lognormal(median 20ms, sigma 0.5), 1% of samples 50× slower",
	} {
		if got := l.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestSampleStragglers: a share of the samples, drawn after the delay
// itself, is the delay times the factor; a rate of 0 draws exactly what
// the distribution alone draws, and a rate of 1 makes every sample a
// straggler.
func TestSampleStragglers(t *testing.T) {
	const n = 100_000
	for _, c := range []struct {
		name        string
		l           Latency
		rate        float64 // the share of stragglers expected
		loose       float64 // how far the share drawn may stray from it
		base        time.Duration
		slow        time.Duration
		sameAsPlain bool // draws what l without stragglers draws, sample for sample
	}{
		{"none", Fixed(10*time.Millisecond).WithStragglers(0, 50), 0, 0, 10 * time.Millisecond, 0, true},
		{"all", Fixed(10*time.Millisecond).WithStragglers(1, 50), 1, 0, 0, 500 * time.Millisecond, false},
		{"1% at 50×", Fixed(10*time.Millisecond).WithStragglers(0.01, 50), 0.01, 0.001, 10 * time.Millisecond, 500 * time.Millisecond, false},
		{"10% at 2.5×", Fixed(4*time.Millisecond).WithStragglers(0.1, 2.5), 0.1, 0.003, 4 * time.Millisecond, 10 * time.Millisecond, false},
		{"capped", Fixed(time.Minute).WithStragglers(1, 1000), 1, 0, 0, MaxLatency, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(5, 6))
			counts := map[time.Duration]int{}
			for range n {
				counts[c.l.Sample(r)]++
			}
			if len(counts) > 2 || counts[c.base]+counts[c.slow] != n {
				t.Fatalf("drew %v; want only %v and %v", counts, c.base, c.slow)
			}
			if share := float64(counts[c.slow]) / n; share < c.rate-c.loose || share > c.rate+c.loose {
				t.Errorf("%.4f of the samples are stragglers, want %.4f ± %.4f", share, c.rate, c.loose)
			}
		})
	}
	// A rate of 0 leaves the random stream as the plain distribution's: a
	// seed replays the same network with or without the field set.
	plain, with := rand.New(rand.NewPCG(7, 8)), rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		if a, b := LogNormal(20*time.Millisecond, 0.5).Sample(plain), LogNormal(20*time.Millisecond, 0.5).WithStragglers(0, 50).Sample(with); a != b {
			t.Fatalf("a rate of 0 drew %v where the plain distribution drew %v", b, a)
		}
	}
	// With a lognormal body, a straggler is the body's own draw times the
	// factor: the same stream, one draw apart.
	body, mixed := rand.New(rand.NewPCG(9, 10)), rand.New(rand.NewPCG(9, 10))
	l := LogNormal(20*time.Millisecond, 0.5)
	for range 1000 {
		d := l.Sample(body)
		straggler := body.Float64() < 0.01
		got := l.WithStragglers(0.01, 50).Sample(mixed)
		if want := d; straggler {
			want = time.Duration(float64(d) * 50)
			if got != want {
				t.Fatalf("straggler %v, want %v", got, want)
			}
		} else if got != want {
			t.Fatalf("sample %v, want %v", got, want)
		}
	}
}

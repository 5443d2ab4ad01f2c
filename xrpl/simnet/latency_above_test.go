package simnet

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// TestLatencyAbove checks the survival function against values worked by
// hand: P(Z > 1) = 0.158655… for a standard normal Z, so a log-normal
// exceeds median·e^sigma with that probability.
func TestLatencyAbove(t *testing.T) {
	const normalAboveOne = 0.15865525393145707
	ms := time.Millisecond
	for _, c := range []struct {
		name string
		l    Latency
		d    time.Duration
		want float64
	}{
		{"fixed, below", Fixed(10 * ms), 10*ms - 1, 1},
		{"fixed, at", Fixed(10 * ms), 10 * ms, 0},
		{"zero latency", Latency{}, 0, 0},
		{"negative delay", Fixed(0), -1, 1},
		{"at the cap", LogNormal(20*ms, 0.5), MaxLatency, 0},
		{"uniform, below lo", Uniform(5, 8), 4, 1},
		{"uniform, at lo", Uniform(5, 8), 5, 0.75},
		{"uniform, inside", Uniform(5, 8), 6, 0.5},
		{"uniform, at hi", Uniform(5, 8), 8, 0},
		{"log-normal, median", LogNormal(20*ms, 0.5), 20 * ms, 0.5},
		{"log-normal, one sigma", LogNormal(20*ms, 0.5), time.Duration(float64(20*ms) * math.Exp(0.5)), normalAboveOne},
		{"log-normal, no spread", LogNormal(20*ms, 0), 20*ms - 1, 1},
		{"stragglers, between", Fixed(10*ms).WithStragglers(0.01, 50), 100 * ms, 0.01},
		{"stragglers, below both", Fixed(10*ms).WithStragglers(0.01, 50), ms, 1},
		{"stragglers, above both", Fixed(10*ms).WithStragglers(0.01, 50), time.Second, 0},
		{"log-normal with stragglers, median", LogNormal(20*ms, 0.5).WithStragglers(0.01, 50), 20 * ms, 0.99*0.5 + 0.01*(1-math.Erfc(math.Log(50)/0.5/math.Sqrt2)/2)},
	} {
		if got := c.l.Above(c.d); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: %v.Above(%v) = %.9f, want %.9f", c.name, c.l, c.d, got, c.want)
		}
	}
}

// TestLatencyPercentile checks that Percentile inverts Above to the
// nanosecond and agrees with the quantiles of what Sample draws.
func TestLatencyPercentile(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		l    Latency
		p    float64
		want time.Duration
	}{
		{Fixed(10 * ms), 0.5, 10 * ms},
		{Fixed(10 * ms), 0, 0},
		{Uniform(5, 8), 0.5, 6},
		{Uniform(5, 8), 1, 8},
		{LogNormal(20*ms, 0.5), 0.5, 20 * ms},
		{Fixed(10*ms).WithStragglers(0.01, 50), 0.99, 10 * ms},
		{Fixed(10*ms).WithStragglers(0.01, 50), 0.995, 500 * ms},
	} {
		if got := c.l.Percentile(c.p); got != c.want {
			t.Errorf("%v.Percentile(%g) = %v, want %v", c.l, c.p, got, c.want)
		}
	}

	const n = 200_000
	l := LogNormal(20*ms, 0.5).WithStragglers(0.01, 50)
	r := rand.New(rand.NewPCG(3, 4))
	samples := make([]time.Duration, n)
	for i := range samples {
		samples[i] = l.Sample(r)
	}
	for _, p := range []float64{0.5, 0.9, 0.94, 0.999} {
		d := l.Percentile(p)
		if above := l.Above(d); above > 1-p || l.Above(d-1) <= 1-p {
			t.Errorf("Percentile(%g) = %v is not the least delay with Above <= %g (Above there %.6f, a nanosecond before %.6f)", p, d, 1-p, above, l.Above(d-1))
		}
		// The share of samples above d is binomial with mean 1−p; allow
		// five standard deviations.
		var over int
		for _, s := range samples {
			if s > d {
				over++
			}
		}
		sd := math.Sqrt((1 - p) * p / n)
		if share := float64(over) / n; math.Abs(share-(1-p)) > 5*sd {
			t.Errorf("%.5f of the samples exceed Percentile(%g) = %v, want %.5f ± %.5f", share, p, d, 1-p, 5*sd)
		}
	}
}

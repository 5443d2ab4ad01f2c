package simnet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// MaxLatency caps every latency sample. A log-normal tail is unbounded in
// theory; in a simulation an hour already means "never" to any timeout, and
// the cap keeps a wild draw from overflowing time arithmetic.
const MaxLatency = time.Hour

// Latency is a distribution of response delays: the time from a request's
// Send to its response being ready to leave the peer (before any bandwidth
// delay). Build one with Fixed, Uniform or LogNormal, and add a tail of
// stragglers with WithStragglers. The zero Latency is Fixed(0). Latency
// values are immutable and may be shared.
type Latency struct {
	kind   latencyKind
	lo, hi time.Duration // Fixed: lo; Uniform: [lo, hi]; LogNormal: lo is the median
	sigma  float64       // LogNormal only
	// straggle is the probability that a sample is a straggler, slow by
	// factor; 0 for none.
	straggle, factor float64
}

type latencyKind uint8

const (
	fixed latencyKind = iota
	uniform
	logNormal
)

// Fixed is a constant delay d.
func Fixed(d time.Duration) Latency { return Latency{kind: fixed, lo: d} }

// Uniform draws delays uniformly from [lo, hi], both included, to the
// nanosecond.
func Uniform(lo, hi time.Duration) Latency { return Latency{kind: uniform, lo: lo, hi: hi} }

// LogNormal draws median·e^(sigma·Z) with Z standard normal: half the delays
// fall below median, and the tail is heavy (sigma 1 puts about 1 draw in
// 1000 above 22× the median). Samples are capped at MaxLatency.
func LogNormal(median time.Duration, sigma float64) Latency {
	return Latency{kind: logNormal, lo: median, sigma: sigma}
}

// WithStragglers returns l with a tail of stragglers: each sample is, with
// probability rate, factor times what l draws (capped at MaxLatency), as
// when a peer now and then stalls on a garbage collection or a disk. It
// needs 0 <= rate <= 1 and a finite factor >= 1 (a peer's validation
// says so); a rate of 0 leaves l as it was.
func (l Latency) WithStragglers(rate, factor float64) Latency {
	l.straggle, l.factor = rate, factor
	return l
}

// Sample draws one delay using r, in [0, MaxLatency]. It draws the same
// number of values from r for a given distribution kind, almost always
// (Uniform draws again, with a probability below its span over 2^64, to
// stay unbiased), apart from LogNormal, whose normal draw may take a
// variable number; stragglers take one more, after the delay's own.
func (l Latency) Sample(r *rand.Rand) time.Duration {
	d := l.sample(r)
	if l.straggle > 0 && r.Float64() < l.straggle {
		x := float64(d) * l.factor
		if x >= float64(MaxLatency) {
			return MaxLatency
		}
		d = time.Duration(x)
	}
	return d
}

// sample draws one delay of l's kind, without stragglers.
func (l Latency) sample(r *rand.Rand) time.Duration {
	var d time.Duration
	switch l.kind {
	case fixed:
		d = l.lo
	case uniform:
		d = l.lo + time.Duration(r.Int64N(int64(l.hi-l.lo)+1))
	case logNormal:
		x := float64(l.lo) * math.Exp(l.sigma*r.NormFloat64())
		if x >= float64(MaxLatency) {
			return MaxLatency
		}
		d = time.Duration(x)
	}
	return min(max(d, 0), MaxLatency)
}

// validate reports parameters that make no distribution.
func (l Latency) validate() error {
	if !isProbability(l.straggle) || l.straggle > 0 && !(l.factor >= 1 && !math.IsInf(l.factor, 1)) {
		return fmt.Errorf("stragglers need a rate in [0, 1] and a finite factor >= 1, got %g and %g", l.straggle, l.factor)
	}
	switch l.kind {
	case fixed:
		if l.lo < 0 {
			return fmt.Errorf("negative fixed latency %v", l.lo)
		}
	case uniform:
		if l.lo < 0 || l.hi < l.lo {
			return fmt.Errorf("uniform latency needs 0 <= lo <= hi, got [%v, %v]", l.lo, l.hi)
		}
	case logNormal:
		if l.lo <= 0 || !(l.sigma >= 0) || math.IsInf(l.sigma, 0) {
			return fmt.Errorf("log-normal latency needs a positive median and finite sigma >= 0, got %v, %v", l.lo, l.sigma)
		}
	default:
		return fmt.Errorf("unknown latency kind %d", l.kind)
	}
	return nil
}

func (l Latency) String() string {
	if l.straggle > 0 {
		base := l
		base.straggle, base.factor = 0, 0
		return fmt.Sprintf("%v, %g%% of samples %g× slower", base, 100*l.straggle, l.factor)
	}
	switch l.kind {
	case fixed:
		return fmt.Sprintf("fixed(%v)", l.lo)
	case uniform:
		return fmt.Sprintf("uniform(%v, %v)", l.lo, l.hi)
	case logNormal:
		return fmt.Sprintf("lognormal(median %v, sigma %g)", l.lo, l.sigma)
	}
	return fmt.Sprintf("latency(kind %d)", l.kind)
}

// Above is the probability that a sample of l exceeds d: the
// distribution's survival function, stragglers included, computed from
// its parameters rather than by sampling (Sample's rounding to the
// nanosecond aside). It is what a bound on a tail needs: for example, if
// at most a share s of requests may be sent twice, at least Above(d) − s of
// them are answered no sooner than d.
func (l Latency) Above(d time.Duration) float64 {
	switch {
	case d < 0:
		return 1
	case d >= MaxLatency:
		return 0
	}
	p := l.above(float64(d))
	if l.straggle > 0 {
		p = (1-l.straggle)*p + l.straggle*l.above(float64(d)/l.factor)
	}
	return p
}

// above is Above for l's kind without stragglers, at x nanoseconds.
func (l Latency) above(x float64) float64 {
	switch l.kind {
	case uniform:
		// Samples are the hi−lo+1 whole nanoseconds of [lo, hi].
		n := float64(l.hi-l.lo) + 1
		return min(max((float64(l.hi)-math.Floor(x))/n, 0), 1)
	case logNormal:
		if l.sigma > 0 && x > 0 {
			z := math.Log(x/float64(l.lo)) / l.sigma
			return math.Erfc(z/math.Sqrt2) / 2
		}
	}
	// Fixed, or a log-normal with no spread, or x <= 0: all samples equal lo.
	if x < float64(l.lo) {
		return 1
	}
	return 0
}

// Percentile is the smallest delay d with Above(d) <= 1 − p: the share p of
// samples take at most d. p must be in [0, 1].
func (l Latency) Percentile(p float64) time.Duration {
	lo, hi := time.Duration(0), MaxLatency // Above(hi) == 0 <= 1 − p always
	for lo < hi {
		mid := lo + (hi-lo)/2
		if l.Above(mid) <= 1-p {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

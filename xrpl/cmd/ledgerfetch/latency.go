package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/peersched/peersched/xrpl/simnet"
)

// latencySpec is a parsed -latency flag. Varied gives each peer its own
// median; the other kinds give every peer the same distribution.
type latencySpec struct {
	kind   string // "varied", "none", "fixed", "uniform", "lognormal"
	a, b   time.Duration
	sigma  float64
	source string
}

// parseLatency parses varied, none, fixed:D, uniform:LO-HI or
// lognormal:MEDIAN,SIGMA.
func parseLatency(s string) (latencySpec, error) {
	spec := latencySpec{source: s}
	kind, arg, _ := strings.Cut(s, ":")
	spec.kind = kind
	var err error
	switch kind {
	case "varied", "none":
		if arg != "" {
			return spec, fmt.Errorf("%s takes no parameter", kind)
		}
	case "fixed":
		spec.a, err = time.ParseDuration(arg)
	case "uniform":
		lo, hi, ok := strings.Cut(arg, "-")
		if !ok {
			return spec, fmt.Errorf("uniform:LO-HI, got %q", s)
		}
		if spec.a, err = time.ParseDuration(lo); err == nil {
			spec.b, err = time.ParseDuration(hi)
		}
		if err == nil && spec.b < spec.a {
			err = fmt.Errorf("uniform bounds out of order in %q", s)
		}
	case "lognormal":
		median, sigma, ok := strings.Cut(arg, ",")
		if !ok {
			return spec, fmt.Errorf("lognormal:MEDIAN,SIGMA, got %q", s)
		}
		if spec.a, err = time.ParseDuration(median); err == nil {
			spec.sigma, err = strconv.ParseFloat(sigma, 64)
		}
		if err == nil && (spec.a <= 0 || spec.sigma < 0) {
			err = fmt.Errorf("lognormal needs a positive median and sigma >= 0, got %q", s)
		}
	default:
		return spec, fmt.Errorf("unknown profile %q", s)
	}
	if err != nil {
		return spec, err
	}
	if spec.a < 0 {
		return spec, fmt.Errorf("negative latency in %q", s)
	}
	return spec, nil
}

// forPeer returns the latency of the peer whose place in the spread is u,
// in [0, 1) (see spread). Varied gives it a median from 5ms (u = 0) to
// 35ms, its delays uniform within ±50% of that median. scale multiplies
// every delay (the slow peer's is 10).
func (l latencySpec) forPeer(u, scale float64) simnet.Latency {
	x := func(d time.Duration) time.Duration { return time.Duration(float64(d) * scale) }
	switch l.kind {
	case "none":
		return simnet.Fixed(0)
	case "fixed":
		return simnet.Fixed(x(l.a))
	case "uniform":
		return simnet.Uniform(x(l.a), x(l.b))
	case "lognormal":
		return simnet.LogNormal(x(l.a), l.sigma)
	}
	median := 5*time.Millisecond + time.Duration(u*float64(30*time.Millisecond))
	return simnet.Uniform(x(median/2), x(median*3/2))
}

// spread returns the place of peer i in the spread of varied latencies:
// the golden-ratio sequence, 0, 0.618, 0.236, 0.854, 0.472, ... Peer i's
// place does not depend on how many peers there are, so adding peers adds
// capacity and never makes a peer slower; any number of peers from p00 on
// are spread about evenly over [0, 1); and p00, which stays honest, is the
// fastest.
func spread(i int) float64 {
	const golden = 0.6180339887498949 // 1/φ
	_, frac := math.Modf(float64(i) * golden)
	return frac
}

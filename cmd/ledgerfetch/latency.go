package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/peersched/peersched/simnet"
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

// forPeer returns the latency of peer i of n. Varied spreads the medians of
// the peers evenly from 5ms to 35ms, in an order shuffled by the seed (rank
// is i's place in that order), each peer's delays uniform within ±50% of its
// median. scale multiplies every delay (the slow peer's is 10).
func (l latencySpec) forPeer(rank, n int, scale float64) simnet.Latency {
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
	median := 5 * time.Millisecond
	if n > 1 {
		median += time.Duration(rank) * 30 * time.Millisecond / time.Duration(n-1)
	}
	return simnet.Uniform(x(median/2), x(median*3/2))
}

package fetch

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/peersched/peersched/timeouts"
)

func TestPercentileNearestRank(t *testing.T) {
	ds := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, c := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 50, 0},
		{ds(7), 50, 7 * ms},
		{ds(7), 99, 7 * ms},
		{ds(1, 2), 50, 1 * ms},
		{ds(1, 2), 51, 2 * ms},
		{ds(1, 2, 3, 4), 50, 2 * ms},
		{ds(1, 2, 3, 4), 99, 4 * ms},
		{ds(hundred...), 50, 50 * ms},
		{ds(hundred...), 99, 99 * ms},
		{ds(hundred...), 100, 100 * ms},
	} {
		if got := percentile(c.sorted, c.p); got != c.want {
			t.Errorf("p%v of %v = %v, want %v", c.p, c.sorted, got, c.want)
		}
	}
	if got := meanOf(ds(1, 2, 6)); got != 3*ms {
		t.Errorf("mean %v", got)
	}
}

func TestIncompleteErrorMessage(t *testing.T) {
	cause := errors.New("context canceled")
	e := &IncompleteError{Verified: 10, Known: 40, Expected: 100, Peers: 0, Cause: cause,
		Since: Trouble{Timeouts: 3, Corrupt: 1}}
	msg := e.Error()
	for _, want := range []string{"90 of 100 objects missing", "10 verified", "no peer is connected", "3 requests timed out", "1 objects corrupt"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if !errors.Is(e, ErrIncomplete) || !errors.Is(e, cause) {
		t.Error("errors.Is does not see ErrIncomplete and the cause")
	}
	e.Expected = 0
	if e.Missing() != 30 || !strings.Contains(e.Error(), "at least 30") {
		t.Errorf("without Expected: %d, %q", e.Missing(), e.Error())
	}
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	if _, err := (Config{}).withDefaults(); !errors.Is(err, ErrBadConfig) {
		t.Errorf("no root: %v", err)
	}
	if _, err := (Config{Root: h(1), Batch: MaxBatch + 1}).withDefaults(); !errors.Is(err, ErrBadConfig) {
		t.Errorf("batch too big: %v", err)
	}
	c, err := (Config{Root: h(1)}).withDefaults()
	if err != nil || c.Batch != DefaultBatch || c.Timeout != DefaultTimeout || c.StallTimeout != DefaultStallTimeout ||
		c.ProgressEvery != DefaultProgressEvery || c.SetSize != DefaultSetSize || c.Clock == nil || c.MinTimeout != DefaultMinTimeout {
		t.Errorf("defaults %+v, %v", c, err)
	}
	if c, _ := (Config{Root: h(1), Timeout: 100 * ms}).withDefaults(); c.MinTimeout != 100*ms {
		t.Errorf("MinTimeout %v above Timeout %v", c.MinTimeout, c.Timeout)
	}
}

// TestRunDeadlinesFromConfig: Run's timeout policy is a timeouts.Estimator
// with MinTimeout and Timeout as its bounds: Timeout before any
// answer, the estimate clamped between them after, every peer's estimate
// for a peer not heard from. (The arithmetic is tested in package timeouts.)
func TestRunDeadlinesFromConfig(t *testing.T) {
	cfg, err := Config{Root: h(1), Timeout: 2 * time.Second, MinTimeout: 100 * ms}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	timing := newTiming(cfg)
	if _, hard := timing.Deadlines("a"); hard != 2*time.Second {
		t.Fatalf("before any answer: %v, want Timeout", hard)
	}
	for _, c := range []struct {
		rtt, soft, hard time.Duration
	}{
		{40 * ms, 80 * ms, 120 * ms},                    // SRTT 40ms, RTTVAR 20ms
		{40 * ms, 70 * ms, 100 * ms},                    // RTTVAR 15ms: 100ms, MinTimeout too
		{200 * ms, 162500 * time.Microsecond, 265 * ms}, // SRTT 60ms, RTTVAR 51.25ms
		// An hour counts as Timeout, 2s: RTTVAR 51.25 + (1940−51.25)/4,
		// SRTT 60 + 1940/8; hard at the cap.
		{time.Hour, 1349375 * time.Microsecond, 2 * time.Second},
	} {
		timing.Observe("a", c.rtt)
		if soft, hard := timing.Deadlines("a"); soft != c.soft || hard != c.hard {
			t.Errorf("after %v: (%v, %v), want (%v, %v)", c.rtt, soft, hard, c.soft, c.hard)
		}
	}
	if _, hard := timing.Deadlines("b"); hard != 2*time.Second {
		t.Errorf("a peer not heard from: %v, want every peer's estimate (the cap)", hard)
	}
	for name, c := range map[string]Config{
		"a Timeout above timeouts.MaxDeadline":        {Root: h(1), Timeout: timeouts.MaxDeadline + 1},
		"a Timeout below the estimator's granularity": {Root: h(1), Timeout: 500 * time.Microsecond},
		"more than a hedge per request":               {Root: h(1), HedgesPerThousand: 1001},
		"a negative number of hedges":                 {Root: h(1), HedgesPerThousand: -1},
	} {
		if _, err := c.withDefaults(); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// measured reports whether the timeout policy has a response time from any
// peer.
func measured(p timeouts.Policy) bool {
	_, _, ok := p.(*timeouts.Estimator).Pool()
	return ok
}

package fetch

import (
	"errors"
	"strings"
	"testing"
	"time"
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

// TestAdaptiveTimeout: RFC 6298's smoothing, table-tested, the clamp, and
// the fall-back to every peer's estimate for a peer not heard from yet.
func TestAdaptiveTimeout(t *testing.T) {
	tl := newTally()
	a, b := tl.peer("a"), tl.peer("b")
	lo, hi := 100*ms, 2*time.Second
	if got := tl.timeout(a, lo, hi); got != hi {
		t.Fatalf("before any sample: %v", got)
	}
	for _, c := range []struct {
		rtt, srtt, rttvar, timeout time.Duration
	}{
		{40 * ms, 40 * ms, 20 * ms, 120 * ms},                   // first sample: var = rtt/2
		{40 * ms, 40 * ms, 15 * ms, 100 * ms},                   // steady: the deviation decays, the floor holds
		{200 * ms, 60 * ms, 51250 * time.Microsecond, 265 * ms}, // a slow answer moves both
	} {
		tl.observe(a, c.rtt)
		if a.rto.srtt != c.srtt || a.rto.rttvar != c.rttvar || tl.timeout(a, lo, hi) != c.timeout {
			t.Errorf("after %v: srtt %v rttvar %v timeout %v, want %v %v %v", c.rtt, a.rto.srtt, a.rto.rttvar, tl.timeout(a, lo, hi), c.srtt, c.rttvar, c.timeout)
		}
	}
	if got := tl.timeout(b, lo, hi); got != 265*ms {
		t.Errorf("a peer not heard from: %v, want every peer's estimate", got)
	}
	tl.observe(b, time.Hour)
	if got := tl.timeout(b, lo, hi); got != hi {
		t.Errorf("after an hour-long answer: %v, want the cap", got)
	}
}

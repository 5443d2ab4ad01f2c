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
		c.ProgressEvery != DefaultProgressEvery || c.SetSize != DefaultSetSize || c.Clock == nil {
		t.Errorf("defaults %+v, %v", c, err)
	}
}

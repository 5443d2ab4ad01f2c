package limit

import (
	"errors"
	"testing"
	"time"
)

func TestRateValidate(t *testing.T) {
	for _, c := range []struct {
		r  Rate
		ok bool
	}{
		{Rate{}, true},
		{Rate{Cost: 250, PerSecond: 4000, Burst: 16000}, true},
		{Rate{Cost: 1, PerSecond: 1, Burst: 1}, true},
		{Rate{Cost: 1, PerSecond: 1, Burst: MaxBurst}, true},
		{Rate{Cost: 0, PerSecond: 1, Burst: 1}, false},
		{Rate{Cost: -1, PerSecond: 1, Burst: 1}, false},
		{Rate{Cost: 1, PerSecond: 0, Burst: 1}, false},
		{Rate{Cost: 1, PerSecond: -5, Burst: 1}, false},
		{Rate{Cost: 2, PerSecond: 1, Burst: 1}, false}, // no message could ever go
		{Rate{Cost: 1, PerSecond: 1, Burst: 0}, false},
		{Rate{Cost: 1, PerSecond: 1, Burst: MaxBurst + 1}, false},
		{Rate{PerSecond: 1}, false},
	} {
		err := c.r.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadRate)) {
			t.Errorf("%+v: Validate() = %v, want ok %v", c.r, err, c.ok)
		}
		p, err := NewPacer(c.r)
		if wantOK := c.ok && !c.r.IsZero(); (err == nil) != wantOK || (err != nil && !errors.Is(err, ErrBadRate)) || (p == nil) == wantOK {
			t.Errorf("%+v: NewPacer = %v, %v; want ok %v", c.r, p, err, wantOK)
		}
	}
}

// paceOp is one call on a Pacer and what it must return: Take (take set)
// or Wait, then Allows at the same instant.
type paceOp struct {
	take   bool
	give   bool // Give instead (now and want unused)
	now    time.Duration
	ok     bool          // Take's answer
	wait   time.Duration // Wait's answer
	allows int64         // Allows(now) after the call
}

func paceScript(t *testing.T, r Rate, ops []paceOp) {
	t.Helper()
	p, err := NewPacer(r)
	if err != nil {
		t.Fatal(err)
	}
	if p.Rate() != r {
		t.Fatalf("Rate() = %+v, want %+v", p.Rate(), r)
	}
	for i, o := range ops {
		switch {
		case o.give:
			p.Give()
		case o.take:
			if got := p.Take(o.now); got != o.ok {
				t.Fatalf("op %d: Take(%v) = %v, want %v", i, o.now, got, o.ok)
			}
		default:
			if got := p.Wait(o.now); got != o.wait {
				t.Fatalf("op %d: Wait(%v) = %v, want %v", i, o.now, got, o.wait)
			}
		}
		if got := p.Allows(o.now); got != o.allows {
			t.Fatalf("op %d: Allows(%v) = %d after the call, want %d", i, o.now, got, o.allows)
		}
	}
}

func TestPacerRippledQueries(t *testing.T) {
	// 250 units a query, 4,000 a second: 16 queries a second, one every
	// 62.5ms, after a burst of 4.
	paceScript(t, Rate{Cost: 250, PerSecond: 4000, Burst: 1000}, []paceOp{
		{now: 0, wait: 0, allows: 4},
		{take: true, now: 0, ok: true, allows: 3},
		{take: true, now: 0, ok: true, allows: 2},
		{take: true, now: 0, ok: true, allows: 1},
		{take: true, now: 0, ok: true, allows: 0},
		{take: true, now: 0, ok: false, allows: 0},
		{now: 0, wait: 62500 * time.Microsecond, allows: 0},
		{now: 62499999, wait: 1, allows: 0},
		{take: true, now: 62500 * time.Microsecond, ok: true, allows: 0},
		{now: 100 * time.Millisecond, wait: 25 * time.Millisecond, allows: 0},
		// 137.5ms after the last take, 550 units have come: two queries.
		{now: 200 * time.Millisecond, wait: 0, allows: 2},
		{now: time.Hour, wait: 0, allows: 4}, // never more than the burst
	})
}

func TestPacerGivesBack(t *testing.T) {
	paceScript(t, Rate{Cost: 3, PerSecond: 3, Burst: 7}, []paceOp{
		{take: true, now: 0, ok: true, allows: 1}, // 4 units left
		{take: true, now: 0, ok: true, allows: 0}, // 1 left
		{now: 0, wait: 666666667, allows: 0},      // 2 units short at 3 a second
		{give: true, now: 0, allows: 1},           // 4 again
		{give: true, now: 0, allows: 2},           // 7: full
		{give: true, now: 0, allows: 2},           // never above the burst
		{take: true, now: time.Second, ok: true, allows: 1},
	})
}

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

// paceOp is one call on a Pacer and what it must return: Take (take set),
// Give (give set), RaiseDearest (raise set) or Wait, then Allows at the
// same instant.
type paceOp struct {
	take   bool
	give   bool  // Give instead (now and the answers unused)
	raise  int64 // RaiseDearest(raise) instead, if not 0
	cost   int64 // what Take charges or Give gives back: the Rate's Cost if 0
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
		cost, err := p.Cost(o.cost)
		if err != nil {
			t.Fatalf("op %d: Cost(%d): %v", i, o.cost, err)
		}
		switch {
		case o.raise != 0:
			if err := p.RaiseDearest(o.raise); err != nil {
				t.Fatalf("op %d: RaiseDearest(%d): %v", i, o.raise, err)
			}
		case o.give:
			if err := p.Give(cost); err != nil {
				t.Fatalf("op %d: Give(%d): %v", i, cost, err)
			}
		case o.take:
			if got, err := p.Take(o.now, cost); got != o.ok || err != nil {
				t.Fatalf("op %d: Take(%v, %d) = %v, %v; want %v", i, o.now, cost, got, err, o.ok)
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

// TestPacerDeclaredCosts: a message that declares a cost is charged that
// cost, no more and no less; the rest stays in the bucket for the next.
// Rippled's units: a query costs 250, a relayed notification 1.
func TestPacerDeclaredCosts(t *testing.T) {
	paceScript(t, Rate{Cost: 250, PerSecond: 4000, Burst: 1000}, []paceOp{
		{take: true, cost: 1, now: 0, ok: true, allows: 3},   // 999 left
		{take: true, cost: 1, now: 0, ok: true, allows: 3},   // 998
		{take: true, now: 0, ok: true, allows: 2},            // 748: a query
		{take: true, cost: 248, now: 0, ok: true, allows: 2}, // exactly 500
		{take: true, cost: 1, now: 0, ok: true, allows: 1},   // 499
		{give: true, cost: 1, now: 0, allows: 2},             // exactly its cost back: 500
		{take: true, now: 0, ok: true, allows: 1},
		{take: true, now: 0, ok: true, allows: 0},                               // 0 left
		{take: true, cost: 1, now: 0, ok: false, allows: 0},                     // not even 1 unit
		{take: true, cost: 1, now: 250 * time.Microsecond, ok: true, allows: 0}, // 1 unit came
		{now: 250 * time.Microsecond, wait: 62500 * time.Microsecond, allows: 0},
	})
}

// TestPacerDearest: counted at a dearer cost than the Rate's, the peer
// allows fewer messages and waits for the dearest one, so that every
// message counted fits whatever it costs; cheaper messages still take
// only their own cost.
func TestPacerDearest(t *testing.T) {
	paceScript(t, Rate{Cost: 250, PerSecond: 4000, Burst: 1000}, []paceOp{
		{now: 0, wait: 0, allows: 4},
		{raise: 400, now: 0, allows: 2},                      // 1000/400
		{raise: 300, now: 0, allows: 2},                      // lower: unchanged
		{take: true, cost: 400, now: 0, ok: true, allows: 1}, // 600
		{take: true, now: 0, ok: true, allows: 0},            // 350: a query fits, the dearest not
		{now: 0, wait: 12500 * time.Microsecond, allows: 0},  // 50 units short at 4,000 a second
		{take: true, cost: 350, now: 0, ok: true, allows: 0}, // 0
		{take: true, cost: 1, now: 0, ok: false, allows: 0},
		{now: 100 * time.Millisecond, wait: 0, allows: 1}, // 400
		{raise: 1000, now: 100 * time.Millisecond, allows: 0},
		{now: 100 * time.Millisecond, wait: 150 * time.Millisecond, allows: 0},
		{now: time.Hour, wait: 0, allows: 1},
	})
}

// TestPacerBadCosts: a negative cost, and one above the burst (the peer
// could never pay it), are refused and change nothing.
func TestPacerBadCosts(t *testing.T) {
	r := Rate{Cost: 250, PerSecond: 4000, Burst: 1000}
	for _, c := range []struct {
		cost int64
		want error // nil: accepted
		is   int64 // what Cost returns
	}{
		{0, nil, 250},
		{1, nil, 1},
		{250, nil, 250},
		{1000, nil, 1000},
		{1001, ErrOverBurst, 0},
		{MaxBurst, ErrOverBurst, 0},
		{-1, ErrBadCount, 0},
	} {
		p, err := NewPacer(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Cost(c.cost)
		if got != c.is || !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("Cost(%d) = %d, %v; want %d, %v", c.cost, got, err, c.is, c.want)
		}
		if c.cost == 0 {
			continue // a charge of 0 is no charge: nothing to refuse
		}
		err = p.RaiseDearest(c.cost)
		if !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("RaiseDearest(%d) = %v, want %v", c.cost, err, c.want)
		}
		if c.want == nil {
			continue
		}
		if p.Dearest() != r.Cost {
			t.Errorf("RaiseDearest(%d) failed but moved Dearest to %d", c.cost, p.Dearest())
		}
		if ok, err := p.Take(0, c.cost); ok || !errors.Is(err, c.want) {
			t.Errorf("Take(0, %d) = %v, %v; want false, %v", c.cost, ok, err, c.want)
		}
		if err := p.Give(c.cost); !errors.Is(err, c.want) {
			t.Errorf("Give(%d) = %v, want %v", c.cost, err, c.want)
		}
		if got := p.Allows(0); got != 4 {
			t.Errorf("after refusing %d, Allows = %d, want 4: nothing charged", c.cost, got)
		}
	}
}

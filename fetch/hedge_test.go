package fetch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// TestSlowRequestsAndTheHedgeTimer drives the hedging bookkeeping by hand:
// a request may be hedged from its soft deadline on, never twice; the
// hedge timer is armed for the first soft deadline to come, or, when that
// one has passed, as long again from now; and with the budget spent no
// timer is armed, since no hedge could go.
func TestSlowRequestsAndTheHedgeTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		s, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Shutdown(context.Background()) }()
		cfg, err := Config{Root: simLedger.Root(), Clock: clk}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		b := newBulk(cfg, s)
		start := clk.Now()
		at := func(d time.Duration) time.Time { return start.Add(d) }
		add := func(id receiver.RequestID, sent, slow time.Duration, hedged bool) *request {
			r := &request{b: b, id: id, to: "p", sentAt: at(sent), slowAt: at(slow), hedged: hedged}
			b.inFlight[id] = r
			return r
		}
		r1 := add(1, 0, 100*ms, false)
		r2 := add(2, 10*ms, 60*ms, false)
		add(3, 0, 10*ms, true) // a hedge, or hedged already
		r4 := add(4, 20*ms, 60*ms, false)

		b.mu.Lock()
		defer b.mu.Unlock()
		for _, c := range []struct {
			now  time.Duration
			want []*request
		}{
			{59 * ms, nil},
			{60 * ms, []*request{r2, r4}}, // the same soft deadline: by ID
			{100 * ms, []*request{r2, r4, r1}},
		} {
			got := b.slowLocked(at(c.now))
			if len(got) != len(c.want) {
				t.Fatalf("at %v: %d slow requests, want %d", c.now, len(got), len(c.want))
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("at %v: slow request %d is %d, want %d", c.now, i, got[i].id, c.want[i].id)
				}
			}
		}

		b.armHedgeLocked(start)
		if b.hedging.timer == nil || !b.hedging.at.Equal(at(60*ms)) {
			t.Fatalf("armed for %v, want the first soft deadline, 60ms", b.hedging.at.Sub(start))
		}
		b.hedging.stopLocked()
		b.armHedgeLocked(at(200 * ms)) // r2 is past it and was not hedged
		if b.hedging.timer == nil || !b.hedging.at.Equal(at(250*ms)) {
			t.Fatalf("armed for %v, want 200ms plus r2's 50ms", b.hedging.at.Sub(start))
		}

		b.hedging.stopLocked()
		for b.budget.Spend() {
		}
		b.armHedgeLocked(start)
		if b.hedging.timer != nil {
			t.Fatalf("armed for %v with the budget spent", b.hedging.at.Sub(start))
		}
	})
}

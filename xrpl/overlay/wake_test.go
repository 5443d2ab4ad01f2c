package overlay

import (
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/simnet"
)

// TestSchedulerTimersRunOnlyWhenDue: in an overlay whose nodes drop what
// overflows their queues, so that requests time out and hedge, each
// scheduler's timer function runs only when its NextWake says it is due,
// and at that time; and before every event, every armed scheduler timer
// has its wake queued for exactly when it is due (none is missed, none
// runs late).
func TestSchedulerTimersRunOnlyWhenDue(t *testing.T) {
	leaves, nodes := 120, 16
	if checked {
		leaves, nodes = 50, 10
	}
	cfg, err := Config{Ledger: mustGenerate(t, 3, leaves), Nodes: nodes, Degree: 4, Seeders: 1, Seed: 4, Channels: 8, TimeLimit: 20 * time.Second,
		Service: simnet.Service{Workers: 1, PerRequest: 20 * time.Millisecond, PerObject: 100 * time.Microsecond, QueueLimit: 1, Overflow: simnet.OverflowDrop}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newSimulation(cfg, Fixed)
	c := s.clock
	record := func(n *nodeClock) (queued bool, at time.Time, now time.Time) {
		c.mu.Lock()
		defer c.mu.Unlock()
		return n.queued, n.queuedAt, c.now
	}
	wakes, missed := 0, 0 // timer runs; events before which a timer's wake was not as due
	c.woke = func(n *nodeClock) {
		wakes++
		for _, v := range s.nodes {
			if v.schedClock != n {
				continue
			}
			due, armed := v.sched.NextWake()
			if now := c.Now(); !armed || due.After(now) {
				t.Errorf("node %d's timer ran at %v, due at %v (armed %v)", v.index, now.Sub(epoch), due.Sub(epoch), armed)
			}
			return
		}
		t.Errorf("a timer ran for a clock of no fetching node")
	}
	c.synced = func() {
		for _, v := range s.nodes {
			if !v.fetching || v.sched == nil {
				continue
			}
			due, armed := v.sched.NextWake()
			queued, at, now := record(v.schedClock)
			if armed != queued || (armed && !at.Equal(latest(due, now))) {
				missed++
				if missed <= 5 {
					t.Errorf("at %v node %d's timer is due at %v (armed %v), queued at %v (%v)", now.Sub(epoch), v.index, due.Sub(epoch), armed, at.Sub(epoch), queued)
				}
			}
		}
	}
	if err := s.start(); err != nil {
		t.Fatal(err)
	}
	s.drive()
	s.stopAll()
	r := s.result()
	if r.Completed != r.Fetching {
		t.Errorf("%d of %d completed", r.Completed, r.Fetching)
	}
	if r.Timeouts+r.Hedges == 0 || wakes == 0 {
		t.Errorf("%d timeouts, %d hedges, %d timer runs: the deadlines were not exercised", r.Timeouts, r.Hedges, wakes)
	}
	t.Logf("%d timer runs, %d timeouts, %d hedges", wakes, r.Timeouts, r.Hedges)
}

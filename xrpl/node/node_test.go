package node

import (
	"errors"
	"testing"
	"time"

	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// smallWorld is a quick world for the tests that run under -race too.
func smallWorld(t *testing.T) world {
	t.Helper()
	l, err := ledger.Generate(5, 2000)
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]simnet.Profile, 4)
	for i := range ps {
		ps[i] = simnet.Profile{Latency: simnet.Uniform(5*ms, 20*ms), Service: simnet.Service{Workers: 2, PerRequest: ms, PerObject: 10 * time.Microsecond}}
	}
	return world{ledger: l, keys: LeafHashes(l, 100), profiles: ps, seed: 1}
}

// TestBothWaysRunEveryComponent: built either way, the node completes the
// fetch while lookups get their entries and relay reaches the peers; each
// component reports its row with its priority, and the old way waits in
// no queue.
func TestBothWaysRunEveryComponent(t *testing.T) {
	w := smallWorld(t)
	for _, way := range []string{WayScheduler, WayOwnPeers} {
		t.Run(way, func(t *testing.T) {
			o := simulate(t, w, run{way: way, fetch: true, lookups: 100, relay: 20})
			if o.err != nil || !o.rep.Complete {
				t.Fatalf("fetch: %v, complete %v", o.err, o.rep.Complete)
			}
			if len(o.comps) != 3 {
				t.Fatalf("rows %+v", o.comps)
			}
			for i, want := range []struct {
				name     string
				priority int
			}{{"fetch", PriorityFetch}, {"lookups", PriorityLookup}, {"relay", PriorityRelay}} {
				c := o.comps[i]
				if c.Name != want.name || c.Priority != want.priority || c.Way != way || c.Done == 0 || c.Requests < c.Done || c.Throughput <= 0 {
					t.Errorf("row %d: %+v", i, c)
				}
				if way == WayOwnPeers && (c.QueueMean != 0 || c.QueueP99 != 0) {
					t.Errorf("the old way waited in a queue: %+v", c)
				}
			}
			if lk := o.comps[1]; lk.P50 <= 0 || lk.P99 < lk.P50 {
				t.Errorf("lookup latencies %v / %v", lk.P50, lk.P99)
			}
		})
	}
}

// TestLookupsAloneAndBudget: lookups alone get every entry, at their rate;
// and under a budget the node's busiest second stays within it plus its
// burst, the fetch completing all the same.
func TestLookupsAloneAndBudget(t *testing.T) {
	w := smallWorld(t)
	o := simulate(t, w, run{way: WayScheduler, lookups: 50, alone: 2 * time.Second})
	if lk := o.component("lookups"); lk.Done < 95 || lk.Failed != 0 {
		t.Errorf("lookups alone: %+v", lk)
	}
	const perSecond = 60
	o = simulate(t, w, run{way: WayScheduler, fetch: true, lookups: 10, relay: 2, budget: Budget(perSecond, 0)})
	if o.err != nil || !o.rep.Complete {
		t.Fatalf("fetch under the budget: %v", o.err)
	}
	if limit := perSecond + int(BudgetBurst(perSecond)); o.busiest > limit {
		t.Errorf("busiest second %d, above %d", o.busiest, limit)
	}
}

func TestConfigErrors(t *testing.T) {
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	for _, c := range []Config{
		{Lookups: -1, Keys: make([]ledger.Hash, 1)},
		{Lookups: MaxPerSecond + 1, Keys: make([]ledger.Hash, 1)},
		{Relay: -1},
		{Lookups: 1},
		{Lookups: 1, Keys: make([]ledger.Hash, 1), LookupTimeout: -1},
		{Relay: 1, Digest: -1},
	} {
		if _, err := OnScheduler(s, c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("OnScheduler(%+v): %v", c, err)
		}
		if _, err := NewRouter(s, c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("NewRouter(%+v): %v", c, err)
		}
	}
	if _, err := NewRouter(nil, Config{}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("NewRouter(nil): %v", err)
	}
}

func TestBudget(t *testing.T) {
	if b := Budget(0, 0); b != (scheduler.Budget{}) {
		t.Errorf("no caps: %+v", b)
	}
	if b := Budget(200, 50_000); b.Rate != 200 || b.Burst != 20 || b.ByteRate != 50_000 || b.ByteBurst != 50_000 {
		t.Errorf("%+v", b)
	}
	if BudgetBurst(5) != 1 || FetchBytes(64) <= FetchBytes(1) || LookupBytes != FetchBytes(1) || NoticeBytes <= 0 {
		t.Errorf("burst %d, sizes %d %d %d %d", BudgetBurst(5), FetchBytes(64), FetchBytes(1), LookupBytes, NoticeBytes)
	}
}

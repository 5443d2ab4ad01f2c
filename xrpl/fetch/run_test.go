package fetch

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/simnet"
)

var quick = Config{Batch: 16, Timeout: 300 * ms, StallTimeout: 5 * time.Second, ProgressEvery: 100 * ms}

// TestSameSeedSameReport: a simulated fetch through the scheduler is a
// function of its seed, faults and all.
func TestSameSeedSameReport(t *testing.T) {
	peers := []simnet.Profile{
		{Latency: simnet.LogNormal(10*ms, 0.7), Loss: 0.05},
		{Latency: simnet.Uniform(5*ms, 60*ms), Missing: 0.1},
		{Latency: simnet.Uniform(5*ms, 20*ms), Faults: simnet.FaultRates{simnet.Duplicate: 0.1, simnet.Corrupt: 0.1}},
		{Latency: simnet.Uniform(7*ms, 30*ms), RandomOutages: &simnet.RandomOutages{MeanUp: 200 * ms, MeanDown: 100 * ms}},
	}
	run := func(seed uint64) Report {
		o := runSim(t, sim{strategy: "scheduler", peers: peers, seed: seed, cfg: quick})
		mustComplete(t, o, nil)
		return o.rep
	}
	a, b := run(5), run(5)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("same seed, different reports:\n%+v\n%+v", a, b)
	}
	if c := run(6); reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same report: the seed is not used")
	}
}

// TestSchedulerUsesEveryPeer and TestPeersetStaysWithItsSet: with honest
// peers the scheduler spreads the work over all of them, while the peerset
// never needs to widen its two.
func TestSchedulerUsesEveryPeer(t *testing.T) {
	o := runSim(t, sim{strategy: "scheduler", peers: honest(6), seed: 1, cfg: quick})
	mustComplete(t, o, nil)
	if len(o.rep.Peers) != 6 {
		t.Fatalf("%d peers served, want 6", len(o.rep.Peers))
	}
	for _, p := range o.rep.Peers {
		if p.Requests == 0 || p.Share < 0.05 || p.P50 <= 0 || p.P99 < p.P50 {
			t.Errorf("peer row %+v", p)
		}
	}
}

func TestPeersetStaysWithItsSet(t *testing.T) {
	o := runSim(t, sim{strategy: "peerset", peers: honest(6), seed: 1, cfg: quick})
	mustComplete(t, o, nil)
	if len(o.rep.Peers) != DefaultSetSize || o.rep.Timeouts != 0 {
		t.Fatalf("%d peers served with %d timeouts, want %d and none", len(o.rep.Peers), o.rep.Timeouts, DefaultSetSize)
	}
}

// TestPeersetWidensAfterTimeouts: two silent peers in the initial set make
// it time out, and it grows until it reaches peers that answer.
func TestPeersetWidensAfterTimeouts(t *testing.T) {
	o := runSim(t, sim{strategy: "peerset", peers: with(6, 2, func(p *simnet.Profile) { p.Faults[simnet.Ignore] = 1 }), seed: 1, cfg: quick})
	mustComplete(t, o, nil)
	if len(o.rep.Peers) <= DefaultSetSize || o.rep.Timeouts == 0 {
		t.Fatalf("%d peers served with %d timeouts", len(o.rep.Peers), o.rep.Timeouts)
	}
	for _, p := range o.rep.Peers[:2] {
		if p.Objects != 0 || p.Failures != p.Requests {
			t.Errorf("silent peer row %+v", p)
		}
	}
}

// TestPeersConnectAfterStart: a fetch started before any peer connects waits
// for them, whichever the strategy.
func TestPeersConnectAfterStart(t *testing.T) {
	for _, strategy := range []string{"scheduler", "peerset"} {
		t.Run(strategy, func(t *testing.T) {
			mustComplete(t, runSim(t, sim{strategy: strategy, peers: honest(3), connectLate: true, cfg: quick}), nil)
		})
	}
}

// TestSchedulerStoppedMidFetch: Run ends with an IncompleteError caused by
// scheduler.ErrStopped, not a stall, when the scheduler stops under it.
func TestSchedulerStoppedMidFetch(t *testing.T) {
	o := runSim(t, sim{strategy: "scheduler", peers: honest(3), cfg: quick, atTime: 100 * ms,
		at: func(s *scheduler.Scheduler, _ context.CancelFunc) { s.Stop() }})
	if !errors.Is(o.err, ErrIncomplete) || !errors.Is(o.err, scheduler.ErrStopped) {
		t.Fatalf("error %v", o.err)
	}
	if o.virtual > 200*ms {
		t.Errorf("took %v to notice", o.virtual)
	}
}

// TestCancelEndsFetch: cancelling the context ends either strategy at once
// with the context's error, and the report still describes the work done.
func TestCancelEndsFetch(t *testing.T) {
	for _, strategy := range []string{"scheduler", "peerset"} {
		t.Run(strategy, func(t *testing.T) {
			o := runSim(t, sim{strategy: strategy, peers: honest(3), cfg: quick, atTime: 100 * ms,
				at: func(_ *scheduler.Scheduler, cancel context.CancelFunc) { cancel() }})
			if !errors.Is(o.err, context.Canceled) || !errors.Is(o.err, ErrIncomplete) {
				t.Fatalf("error %v", o.err)
			}
			if o.rep.Complete || o.rep.Objects == 0 || o.rep.Requests == 0 {
				t.Errorf("report %+v", o.rep)
			}
		})
	}
}

// TestProgressReports: Progress is called every ProgressEvery, counts grow,
// and the last call says Done with every object.
func TestProgressReports(t *testing.T) {
	var got []Progress
	cfg := quick
	cfg.Progress = func(p Progress) { got = append(got, p) }
	o := runSim(t, sim{strategy: "scheduler", peers: honest(4), cfg: cfg})
	mustComplete(t, o, nil)
	if len(got) < 2 {
		t.Fatalf("%d progress reports in %v", len(got), o.virtual)
	}
	last := got[len(got)-1]
	if !last.Done || last.Verified != simLedger.Len() || last.Expected != simLedger.Len() || last.InFlight != 0 || last.Rate <= 0 {
		t.Errorf("last progress %+v", last)
	}
	for i, p := range got[:len(got)-1] {
		if p.Done || p.Peers != 4 || p.Elapsed != time.Duration(i+1)*cfg.ProgressEvery {
			t.Errorf("progress %d: %+v", i, p)
		}
		if i > 0 && p.Verified < got[i-1].Verified {
			t.Errorf("progress went back: %+v after %+v", p, got[i-1])
		}
	}
}

// TestSilentPeersCostLittle: peers that never answer become suspect after a
// few timeouts and then get only one-hash probes, so they hold up little.
func TestSilentPeersCostLittle(t *testing.T) {
	o := runSim(t, sim{strategy: "scheduler", peers: with(6, 2, func(p *simnet.Profile) { p.Faults[simnet.Ignore] = 1 }), seed: 11, cfg: quick})
	mustComplete(t, o, nil)
	for _, p := range o.rep.Peers[:2] {
		if p.Requests > 10 || p.Objects != 0 {
			t.Errorf("silent peer row %+v: want few requests", p)
		}
	}
}

// TestHedgingEndsTheTail: requests whose answers never come (spoofed under
// unknown IDs) would each hold their hashes for a whole timeout; with
// timeouts as long as 5s the fetch still ends long before, because at the
// tail those requests are asked again of other peers.
func TestHedgingEndsTheTail(t *testing.T) {
	cfg := quick
	cfg.Timeout, cfg.MinTimeout, cfg.StallTimeout = 5*time.Second, 5*time.Second, 20*time.Second
	peers := honest(4)
	// The faulty peer must not be the one that gets the root: with no
	// estimate known, the first of the equal peers in the scheduler's
	// order, the one with the lowest tie key. Take the highest.
	const seed = 3
	faulty := 0
	for i := range peers {
		if peerpool.TieKey(rankSeed(seed), simID(i)) > peerpool.TieKey(rankSeed(seed), simID(faulty)) {
			faulty = i
		}
	}
	peers[faulty].Faults[simnet.UnknownID] = 0.5
	o := runSim(t, sim{strategy: "scheduler", peers: peers, seed: seed, cfg: cfg})
	mustComplete(t, o, nil)
	if o.rep.Hedges == 0 || o.rep.Dropped.Unknown == 0 {
		t.Fatalf("%d hedges, %d unknown IDs dropped", o.rep.Hedges, o.rep.Dropped.Unknown)
	}
	if o.virtual >= cfg.Timeout {
		t.Fatalf("took %v, the timeout is %v: the tail waited for it", o.virtual, cfg.Timeout)
	}
	t.Logf("%v with %d hedges", o.virtual, o.rep.Hedges)
}

// TestHedgeBudgetCapsHedges: sixteen peers lose a tenth of their answers
// (spoofed under unknown IDs) and the timeout is 5s, so the tail of the
// fetch would hedge far more than 5% of its requests. Whatever
// HedgesPerThousand allows, the hedges stay within hedge.DefaultBurst plus
// that share of the other requests, and the fetch still completes, the
// requests it could not hedge ending at their timeouts; the default budget
// binds here (a budget of 100% allows more hedges, and the fetch is faster
// for them: the price of the cap, which Config.HedgesPerThousand states).
func TestHedgeBudgetCapsHedges(t *testing.T) {
	peers := with(16, 16, func(p *simnet.Profile) { p.Faults[simnet.UnknownID] = 0.1 })
	hedges := make(map[int]int)
	for _, perThousand := range []int{1, hedge.DefaultPerThousand, 1000} {
		cfg := quick
		cfg.Timeout, cfg.MinTimeout, cfg.StallTimeout = 5*time.Second, 5*time.Second, 20*time.Second
		cfg.HedgesPerThousand = perThousand
		o := runSim(t, sim{strategy: "scheduler", peers: peers, seed: 4, channels: 8, cfg: cfg})
		mustComplete(t, o, nil)
		t.Logf("%d per thousand: %v, %d requests, %d hedges, %d timeouts", perThousand, o.virtual, o.rep.Requests, o.rep.Hedges, o.rep.Timeouts)
		earning := o.rep.Requests - o.rep.Hedges // hedges earn nothing
		if bound := hedge.DefaultBurst + perThousand*earning/1000; o.rep.Hedges > bound {
			t.Errorf("%d per thousand: %d hedges for %d other requests, above %d", perThousand, o.rep.Hedges, earning, bound)
		}
		hedges[perThousand] = o.rep.Hedges
	}
	if hedges[1] >= hedges[hedge.DefaultPerThousand] || hedges[hedge.DefaultPerThousand] >= hedges[1000] {
		t.Errorf("hedges at 1, 50 and 1000 per thousand: %d, %d, %d; want each budget to bind below the next", hedges[1], hedges[50], hedges[1000])
	}
}

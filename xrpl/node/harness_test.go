package node

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

const ms = time.Millisecond

// run is one node over simulated peers: built one way, with the fetch or
// not, and some components.
type run struct {
	way     string // WayScheduler or WayOwnPeers
	fetch   bool
	lookups float64
	relay   float64
	budget  scheduler.Budget // the scheduler's only
	// alone is how long a run without the fetch lasts.
	alone time.Duration
}

func (r run) name() string {
	var parts []string
	if r.fetch {
		parts = append(parts, "fetch")
	}
	if r.lookups > 0 {
		parts = append(parts, "lookups")
	}
	if r.relay > 0 {
		parts = append(parts, "relay")
	}
	s := fmt.Sprint(parts)
	if r.budget.Rate > 0 {
		s += fmt.Sprintf(", budget %d/s", r.budget.Rate)
	}
	return s
}

// outcome is what a run measured.
type outcome struct {
	rep     fetch.Report // the fetch's, if it ran
	err     error
	comps   []ComponentReport
	virtual time.Duration
	busiest int // messages in the busiest second
	sent    int // messages sent in all
	// warnings and cuts are the peers' verdicts on the node: balances that
	// crossed rippled's warning, and connections cut for their charges.
	warnings, cuts int
}

// component returns the row of the component named, or a zero one.
func (o outcome) component(name string) ComponentReport {
	for _, c := range o.comps {
		if c.Name == name {
			return c
		}
	}
	return ComponentReport{}
}

// world is the peers and the ledger every run shares.
type world struct {
	ledger   *ledger.Ledger
	keys     []ledger.Hash
	profiles []simnet.Profile
	seed     uint64
}

// simulate runs r over w in a synctest bubble, on a mock clock created in
// it, and returns what it measured.
func simulate(t *testing.T, w world, r run) outcome {
	t.Helper()
	var o outcome
	synctest.Test(t, func(t *testing.T) { o = simulateInBubble(t, w, r) })
	return o
}

func simulateInBubble(t *testing.T, w world, r run) outcome {
	clk := clock.NewMock()
	start := clk.Now()
	meter := NewMeter(clk)
	cfg := fetch.Config{
		Root: w.ledger.Root(), Expected: w.ledger.Len(), Clock: clk,
		ProgressEvery: 100 * ms, Priority: PriorityFetch,
	}
	comps := Config{Clock: clk, Seed: w.seed, Lookups: r.lookups, Keys: w.keys, Relay: r.relay}

	// The host the network hands its peers to, and how the fetch runs.
	var host fetch.Host
	var connect func(p peer.Peer) error
	var fetchRun func(context.Context) (fetch.Report, error)
	var components *Components
	var sched *scheduler.Scheduler
	switch r.way {
	case WayScheduler:
		var err error
		sched, err = scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true, RankSeed: w.seed + 1,
			RequestIDs: tcpnet.RequestIDs(), Budget: r.budget})
		if err != nil {
			t.Fatal(err)
		}
		cfg.PeerRate = fetch.RippledRate
		host = sched
		connect = func(p peer.Peer) error {
			return sched.ConnectWith(p, peer.Options{Rate: fetch.RippledRate}) // an adaptive limit
		}
		fetchRun = func(ctx context.Context) (fetch.Report, error) { return fetch.Run(ctx, sched, cfg) }
		if components, err = OnScheduler(sched, comps); err != nil {
			t.Fatal(err)
		}
	case WayOwnPeers:
		ps, err := fetch.NewPeerset(cfg)
		if err != nil {
			t.Fatal(err)
		}
		router, err := NewRouter(ps, comps)
		if err != nil {
			t.Fatal(err)
		}
		host, components, fetchRun = router, router.Components(), ps.Run
		connect = func(p peer.Peer) error { return router.Connect(p, tcpnet.DefaultChannels) }
	default:
		t.Fatalf("unknown way %q", r.way)
	}

	net, err := simnet.New(simnet.Config{
		Ledger: w.ledger, Clock: clk, Seed: w.seed,
		Deliver:      func(from peer.ID, id peer.RequestID, resp any) { _ = host.Deliver(from, id, resp) },
		OnDisconnect: func(p *simnet.Peer) { _ = host.Disconnect(p.ID()) },
		OnReconnect:  func(p *simnet.Peer) { _ = connect(meter.Peer(p)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var peers []*simnet.Peer
	for i, prof := range w.profiles {
		p, err := net.AddPeer(peer.ID(fmt.Sprintf("p%02d", i)), prof)
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, p)
		if err := connect(meter.Peer(p)); err != nil {
			t.Fatal(err)
		}
	}

	components.Start()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		rep fetch.Report
		err error
	}
	done := make(chan result, 1)
	if r.fetch {
		go func() {
			rep, err := fetchRun(ctx)
			done <- result{rep, err}
		}()
	}
	var res result
	for {
		synctest.Wait()
		if !r.fetch && clk.Now().Sub(start) >= r.alone {
			break
		}
		select {
		case res = <-done:
		default:
			clk.Add(ms)
			continue
		}
		break
	}
	o := outcome{rep: res.rep, err: res.err, comps: components.Stop(), virtual: clk.Now().Sub(start),
		busiest: meter.BusiestSecond(), sent: meter.Sent()}
	if r.fetch {
		o.comps = append([]ComponentReport{FetchReport(r.way, PriorityFetch, res.rep)}, o.comps...)
	}
	for _, p := range peers {
		st := p.Stats()
		o.warnings += int(st.Resources.Warnings)
		o.cuts += int(st.Resources.Drops)
	}
	net.Close()
	if sched != nil {
		if err := sched.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return o
}

package fetch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// simLedger is shared by the simulated fetches: it is immutable.
var simLedger = mustGenerate(7, 3000)

func mustGenerate(seed uint64, objects int) *ledger.Ledger {
	l, err := ledger.Generate(seed, objects)
	if err != nil {
		panic(err)
	}
	return l
}

// sim describes one fetch over a simulated network.
type sim struct {
	strategy string // "scheduler" or "peerset"
	ledger   *ledger.Ledger
	peers    []simnet.Profile // one peer per profile, named p00, p01, ...
	channels int
	// limits, if set, connects each peer to the scheduler with these
	// options (an adaptive limit, by default) instead of channels fixed
	// ones. The peerset ignores it.
	limits *peer.Options
	seed   uint64
	cfg    Config // Root, Expected and Clock are filled in
	// connectLate, if set, connects the peers only after the fetch started.
	connectLate bool
	// at, if set, runs once the mock clock has passed atTime, with the
	// scheduler (nil for the peerset) and the fetch's cancel function.
	at     func(sched *scheduler.Scheduler, cancel context.CancelFunc)
	atTime time.Duration
	// warmUp, if set, is when the outcome's warmUpServed is counted.
	warmUp time.Duration
	// refusals, if set, hands the peers' refusals (simnet.Config.Refuse)
	// to the host as a transport would: through Refuser, which both
	// strategies' hosts are. Without it peers answer empty instead.
	refusals bool
	// disconnect, if set, wires Config.Disconnect to the host's
	// Disconnect, as a transport would, and records each call.
	disconnect bool
	// answer, if set, rewrites every answer before the host gets it: it is
	// given the peer that answered, the time since the start on the mock
	// clock, and the answer, and returns what the host gets.
	answer func(from peer.ID, since time.Duration, msg any) any
}

// disconnection is one call of Config.Disconnect.
type disconnection struct {
	id     peer.ID
	reason error
	at     time.Duration // on the mock clock, from the start
}

// outcome is what a simulated fetch returned, and the network's view.
type outcome struct {
	rep   Report
	err   error
	peers map[peer.ID]simnet.Stats
	// queueDelays is how long each request the peer served waited for
	// one of its workers (simnet.Peer.QueueDelays).
	queueDelays map[peer.ID][]time.Duration
	// limits is each connected peer's limit when the fetch ended (the
	// scheduler strategy only).
	limits map[peer.ID]int
	// warmUpServed is how many requests each peer's service had admitted
	// when sim.warmUp had passed: queueDelays[id][warmUpServed[id]:] are
	// the delays of the requests that arrived after the warm-up.
	warmUpServed map[peer.ID]int
	// virtual is how long the fetch took on the mock clock.
	virtual time.Duration
	// disconnected lists the calls of Config.Disconnect (sim.disconnect).
	disconnected []disconnection
}

// simID is the ID of the i-th peer of a sim.
func simID(i int) peer.ID { return peer.ID(fmt.Sprintf("p%02d", i)) }

// rankSeed is the scheduler's Config.RankSeed in a run whose network has
// the given seed: the same, plus one, since 0 would have New draw one.
func rankSeed(seed uint64) uint64 { return seed + 1 }

// step is how far the mock clock moves between checks: fine enough that
// every latency in the tables falls between steps in its own order.
const step = time.Millisecond

// runSim runs s inside a new synctest bubble, on a mock clock created in it,
// and returns what happened.
func runSim(t *testing.T, s sim) outcome {
	t.Helper()
	var out outcome
	synctest.Test(t, func(t *testing.T) {
		out = runInBubble(t, s)
	})
	return out
}

func runInBubble(t *testing.T, s sim) outcome {
	t.Helper()
	clk := clock.NewMock()
	start := clk.Now()
	if s.ledger == nil {
		s.ledger = simLedger
	}
	if s.channels == 0 {
		s.channels = 2
	}
	cfg := s.cfg
	cfg.Root, cfg.Clock = s.ledger.Root(), clk
	if cfg.Base == nil {
		cfg.Expected = s.ledger.Len() // with a base, the fetch does not know
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var host Host
	var discMu sync.Mutex
	var disconnected []disconnection
	if s.disconnect {
		cfg.Disconnect = func(id peer.ID, reason error) {
			discMu.Lock()
			disconnected = append(disconnected, disconnection{id, reason, clk.Now().Sub(start)})
			discMu.Unlock()
			_ = host.Disconnect(id) // set before the fetch runs
		}
	}
	var run func() (Report, error)
	var sched *scheduler.Scheduler
	var fetchSender atomic.Pointer[bulk]
	switch s.strategy {
	case "scheduler":
		var err error
		// Inline callbacks and a fixed rank seed: on the mock clock, a seed
		// then replays exactly.
		sched, err = scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true, RankSeed: rankSeed(s.seed)})
		if err != nil {
			t.Fatal(err)
		}
		host = sched
		run = func() (Report, error) {
			return runFetch(ctx, sched, cfg, func(b *bulk) { fetchSender.Store(b) })
		}
	case "peerset":
		ps, err := NewPeerset(cfg)
		if err != nil {
			t.Fatal(err)
		}
		host = ps
		run = func() (Report, error) { return ps.Run(ctx) }
	default:
		t.Fatalf("unknown strategy %q", s.strategy)
	}
	connectOne := func(p *simnet.Peer) error {
		if s.limits != nil && sched != nil {
			return sched.ConnectWith(p, *s.limits)
		}
		return host.Connect(p, s.channels)
	}
	netCfg := simnet.Config{
		Ledger: s.ledger,
		Clock:  clk,
		Seed:   s.seed,
		Deliver: func(from peer.ID, id peer.RequestID, r any) {
			if s.answer != nil {
				r = s.answer(from, clk.Now().Sub(start), r)
			}
			_ = host.Deliver(from, id, r)
		},
		OnDisconnect: func(p *simnet.Peer) { _ = host.Disconnect(p.ID()) },
		OnReconnect:  func(p *simnet.Peer) { _ = connectOne(p) },
	}
	if r, ok := host.(Refuser); ok && s.refusals {
		netCfg.Refuse = func(from peer.ID, id peer.RequestID) { _ = r.Refuse(from, id) }
	} else if s.refusals {
		t.Fatalf("the %s host is no Refuser", s.strategy)
	}
	net, err := simnet.New(netCfg)
	if err != nil {
		t.Fatal(err)
	}
	var peers []*simnet.Peer
	for i, prof := range s.peers {
		p, err := net.AddPeer(simID(i), prof)
		if err != nil {
			t.Fatal(err)
		}
		peers = append(peers, p)
	}
	connect := func() {
		for _, p := range peers {
			if err := connectOne(p); err != nil {
				t.Errorf("connect %s: %v", p.ID(), err)
			}
		}
	}
	if !s.connectLate {
		connect()
	}

	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := run()
		done <- result{rep, err}
	}()
	if s.connectLate {
		synctest.Wait()
		clk.Add(10 * step)
		connect()
	}
	var r result
	warmUpServed := map[peer.ID]int{}
	for {
		synctest.Wait()
		select {
		case r = <-done:
		default:
			if sched != nil {
				// The fetch's sender is in the queue at most once: a second
				// copy would halve every offer and outlive the fetch. Its
				// hedges wait there too, each for a channel.
				hedges := 0
				if b := fetchSender.Load(); b != nil {
					hedges = b.hedger.Stats().Waiting
				}
				if n := sched.Stats().SendersWaiting; n > 1+hedges {
					t.Fatalf("%d senders waiting at %v, %d of them hedges", n, clk.Now().Sub(start), hedges)
				}
			}
			if s.warmUp > 0 && len(warmUpServed) == 0 && clk.Now().Sub(start) >= s.warmUp {
				for _, p := range peers {
					warmUpServed[p.ID()] = p.Stats().Served
				}
			}
			if s.at != nil && clk.Now().Sub(start) >= s.atTime {
				s.at(sched, cancel)
				s.at = nil
			}
			clk.Add(step)
			continue
		}
		break
	}
	if sched != nil {
		if st := sched.Stats(); st.SendersWaiting != 0 {
			t.Errorf("%d senders still waiting after Run returned", st.SendersWaiting)
		}
	}
	out := outcome{rep: r.rep, err: r.err, virtual: clk.Now().Sub(start), peers: map[peer.ID]simnet.Stats{},
		queueDelays: map[peer.ID][]time.Duration{}, warmUpServed: warmUpServed}
	discMu.Lock()
	out.disconnected = disconnected
	discMu.Unlock()
	for _, p := range peers {
		out.peers[p.ID()] = p.Stats()
		out.queueDelays[p.ID()] = p.QueueDelays()
	}
	if sched != nil {
		out.limits = map[peer.ID]int{}
		for _, u := range sched.PeerUsage(nil) {
			out.limits[u.ID] = u.Limit
		}
	}
	net.Close()
	if sched != nil {
		if err := sched.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// mustComplete fails t unless o is a complete fetch of l.
func mustComplete(t *testing.T, o outcome, l *ledger.Ledger) {
	t.Helper()
	if l == nil {
		l = simLedger
	}
	if o.err != nil {
		t.Fatalf("fetch failed after %v: %v\nreport: %+v", o.virtual, o.err, o.rep)
	}
	if !o.rep.Complete || o.rep.Objects != l.Len() || o.rep.Known != l.Len() {
		t.Fatalf("report says complete=%v with %d objects of %d known, ledger has %d", o.rep.Complete, o.rep.Objects, o.rep.Known, l.Len())
	}
	if o.rep.Bytes != l.Size() {
		t.Fatalf("fetched %d bytes, ledger has %d", o.rep.Bytes, l.Size())
	}
	objects := 0
	for _, p := range o.rep.Peers {
		objects += p.Objects
	}
	if objects != o.rep.Objects {
		t.Fatalf("peers delivered %d objects in all, report says %d", objects, o.rep.Objects)
	}
}

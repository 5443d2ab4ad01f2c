package overlay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/penalty"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/simnet"
)

// simulation is one run of one strategy over one overlay.
type simulation struct {
	cfg      Config
	strategy Strategy
	content  *content
	clock    *virtualClock
	nodes    []*node
	fetchers int
	// completed lists, in order, the fetching nodes whose fetch verified
	// the last node during the event being run: the driver waits for
	// their fetches to return before it takes the next event.
	completed []*node
	done      int
	byID      map[peer.ID]*node
	redials   *rand.Rand // the jitter of the nodes' redials after a cut
}

// Run simulates the overlay cfg describes, every fetching node using
// strategy, and returns what happened. It is deterministic: the same cfg
// and strategy give the same Result, wall time aside. It fails only with
// an error wrapping ErrBadConfig, or for an unknown strategy.
func Run(cfg Config, strategy Strategy) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	switch strategy {
	case Adaptive, Fixed, PeerSet, Rippled:
	default:
		return Result{}, fmt.Errorf("%w: unknown strategy %q", ErrBadConfig, strategy)
	}
	s := newSimulation(cfg, strategy)
	if err := s.start(); err != nil {
		s.stopAll()
		return Result{}, err
	}
	s.drive()
	s.stopAll()
	return s.result(), nil
}

// newSimulation draws the overlay from cfg.Seed: the graph, each link's
// latency and the seeders, in that order.
func newSimulation(cfg Config, strategy Strategy) *simulation {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6f7665726c6179)) // "overlay"
	s := &simulation{cfg: cfg, strategy: strategy, content: newContent(cfg.Ledger), clock: newVirtualClock(),
		redials: rand.New(rand.NewPCG(cfg.Seed, 0x72656469616c))} // "redial"
	adj := randomGraph(cfg.Nodes, cfg.Degree, rng)
	width := len(fmt.Sprint(cfg.Nodes - 1))
	size := cfg.Ledger.Len()
	for i := range cfg.Nodes {
		s.nodes = append(s.nodes, &node{
			index:      int32(i),
			id:         peer.ID(fmt.Sprintf("n%0*d", width, i)),
			neighbours: adj[i],
			latency:    make([]time.Duration, len(adj[i])),
			holds:      newHoldings(size),
			queue:      simnet.NewServiceQueue(cfg.Service.Workers, cfg.Service.QueueLimit),
		})
		s.nodes[i].accounts = resource.NewAccounts(s.clock, !cfg.LimitsOff)
	}
	// One latency per link, the same both ways, drawn once per pair.
	span := int64(cfg.MaxLatency - cfg.MinLatency)
	for i, n := range s.nodes {
		for k, j := range n.neighbours {
			if int(j) < i {
				continue
			}
			d := cfg.MinLatency + time.Duration(rng.Int64N(span+1))
			n.latency[k] = d
			m := s.nodes[j]
			for kk, back := range m.neighbours {
				if int(back) == i {
					m.latency[kk] = d
				}
			}
		}
	}
	for _, i := range rng.Perm(cfg.Nodes)[:cfg.Seeders] {
		n := s.nodes[i]
		n.seeder = true
		n.holds.fill(size)
		n.held = size
	}
	s.fetchers = cfg.Nodes - cfg.Seeders
	s.byID = make(map[peer.ID]*node, len(s.nodes))
	for _, n := range s.nodes {
		s.byID[n.id] = n
	}
	return s
}

// rankSeed is node i's scheduler RankSeed: a mix of the simulation's seed
// and the node's index, never 0 (which would have New draw one).
func rankSeed(seed uint64, i int32) uint64 {
	x := seed ^ (uint64(i)+1)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x | 1
}

// start starts every fetching node's fetch at time zero, in index order,
// each one only after the previous one has sent its first requests.
func (s *simulation) start() error {
	for _, n := range s.nodes {
		if n.seeder {
			continue
		}
		if err := s.startFetch(n); err != nil {
			return err
		}
	}
	return nil
}

// startFetch connects n to its neighbours, starts its fetch on a goroutine
// of its own and waits until the fetch has sent its first requests and only
// waits (or has returned).
func (s *simulation) startFetch(n *node) error {
	// The fetch and its scheduler read one time through two views of the
	// clock: a scheduler re-arms its timer with Reset, so its clock wakes
	// it by its NextWake, while the fetch's own timers (the peer set's,
	// the penalty judge's wake) are plain timers.
	n.clock, n.schedClock = newNodeClock(s.clock, nil), newNodeClock(s.clock, nil)
	seed := rankSeed(s.cfg.Seed, n.index)
	cfg := fetch.Config{
		Root:     s.cfg.Ledger.Root(),
		Expected: s.cfg.Ledger.Len(),
		Received: func(h ledger.Hash, _ []byte) { s.received(n, h) },
		Batch:    s.cfg.Batch,
		Clock:    n.clock,
		Penalty:  penalty.Config{Seed: seed}, // each node its own jitter
		// The virtual clock's tickers never tick (see virtualClock): the
		// simulation's TimeLimit ends a fetch that cannot finish.
		ProgressEvery: time.Hour,
	}
	var run func(context.Context) (fetch.Report, error)
	var connect func(p peer.Peer) error
	switch s.strategy {
	case Adaptive, Fixed:
		sched, err := scheduler.New(scheduler.Config{Clock: n.schedClock, InlineCallbacks: true, RankSeed: seed})
		if err != nil {
			return fmt.Errorf("overlay: node %s: %w", n.id, err)
		}
		n.sched, n.host = sched, sched
		n.schedClock.wakeBy(sched.NextWake)
		run = func(ctx context.Context) (fetch.Report, error) { return fetch.Run(ctx, sched, cfg) }
		if s.strategy == Adaptive {
			connect = func(p peer.Peer) error { return sched.ConnectWith(p, peer.Options{}) }
		} else {
			connect = func(p peer.Peer) error { return sched.Connect(p, s.cfg.Channels) }
		}
	case PeerSet:
		ps, err := fetch.NewPeerset(cfg)
		if err != nil {
			return fmt.Errorf("overlay: node %s: %w", n.id, err)
		}
		n.host = ps
		run = ps.Run
		connect = func(p peer.Peer) error { return ps.Connect(p, s.cfg.Channels) }
	case Rippled:
		rp, err := fetch.NewRippled(cfg, fetch.RippledConfig{Seed: seed, HasLedger: s.hasLedger})
		if err != nil {
			return fmt.Errorf("overlay: node %s: %w", n.id, err)
		}
		n.host = rp
		run = rp.Run
		connect = func(p peer.Peer) error { return rp.Connect(p, s.cfg.Channels) }
	}
	n.connect = connect
	for k, j := range n.neighbours {
		if err := connect(&link{sim: s, from: n, to: s.nodes[j], latency: n.latency[k]}); err != nil {
			return fmt.Errorf("overlay: node %s: connect %s: %w", n.id, s.nodes[j].id, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.ran, n.fetching = cancel, make(chan struct{}), true
	go func() {
		defer close(n.ran)
		n.report, n.err = run(ctx)
	}()
	select {
	case <-n.clock.watching:
	case <-n.ran:
	}
	return nil
}

// hasLedger reports whether the node named id holds the whole ledger: what
// a rippled node's status messages tell its neighbours. It runs on the
// driver's goroutine, or on a fetch's while the driver waits for it.
func (s *simulation) hasLedger(id peer.ID) bool {
	n := s.byID[id]
	return n != nil && n.held == s.cfg.Ledger.Len()
}

// received records that n's fetch verified the node named h.
func (s *simulation) received(n *node, h ledger.Hash) {
	if !n.holds.add(s.content.index[h]) {
		return
	}
	n.held++
	if n.held == s.cfg.Ledger.Len() {
		n.completed = true
		n.doneAt = s.clock.Now().Sub(epoch)
		s.done++
		s.completed = append(s.completed, n)
	}
}

// drive runs events until every fetch has completed, nothing is left to
// happen, or the time limit passes.
func (s *simulation) drive() {
	limit := epoch.Add(s.cfg.TimeLimit)
	nextProgress := time.Duration(0)
	for s.done < s.fetchers {
		fn, ok := s.clock.next(limit)
		if !ok {
			break
		}
		fn()
		for _, n := range s.completed {
			s.finish(n)
		}
		s.completed = s.completed[:0]
		if s.cfg.Progress != nil {
			if now := s.clock.Now().Sub(epoch); now >= nextProgress {
				nextProgress = now.Truncate(time.Second) + time.Second
				s.progress()
			}
		}
	}
}

func (s *simulation) progress() {
	if s.cfg.Progress != nil {
		s.cfg.Progress(Progress{Strategy: s.strategy, Virtual: s.clock.Now().Sub(epoch), Completed: s.done, Fetching: s.fetchers})
	}
}

// finish waits for n's fetch to return and stops its scheduler. The fetch
// returns at once: it has verified every node, and its goroutine only tidies
// up, while the driver waits, so nothing else moves meanwhile.
func (s *simulation) finish(n *node) {
	if !n.fetching {
		return
	}
	if !n.completed {
		n.cancel() // a completed fetch returns by itself, nil error and all
	}
	<-n.ran
	n.cancel()
	n.fetching = false
	if n.sched != nil {
		n.sched.Stop()
	}
	s.clock.retire(n.schedClock) // n.clock's timers are plain ones
	n.host, n.sched = nil, nil   // its fetch's state can go
	s.progress()
}

// stopAll ends the fetches still running (at the time limit, or when
// nothing was left to happen), one at a time.
func (s *simulation) stopAll() {
	for _, n := range s.nodes {
		if n.fetching {
			s.finish(n)
		}
	}
}

// arrive runs when a request reaches l.to: it joins the service queue, or
// finds it full and is dropped or refused.
func (s *simulation) arrive(l *link, id peer.RequestID, hashes []ledger.Hash) {
	if l.cut {
		return // lost with the connection
	}
	now := s.clock.Now()
	v := l.to
	if !s.cfg.LimitsOff && resource.Busy(l.queued) {
		v.busyDrops++
		s.charge(l, resource.FeeTrivial) // rippled's fee for a query it never handled
		return
	}
	defer s.charge(l, resource.FeeQuery) // once handled, as rippled charges
	if v.queue.Full(now) {
		v.dropped++
		if s.cfg.Service.Overflow == simnet.OverflowReject {
			l.queued++
			s.clock.at(l.latency, func() { s.refuse(l, id) })
		}
		return
	}
	start, end := v.queue.Serve(now, s.cfg.Service.Time(len(hashes), 0))
	v.served++
	v.worstWait = max(v.worstWait, start.Sub(now))
	v.peakWaiting = max(v.peakWaiting, v.queue.Waiting(now))
	s.clock.at(end.Sub(now), func() { s.respond(l, id, hashes) })
}

// respond runs when l.to has served a request: the answer holds what it
// holds now, partial subtrees included, and leaves the rest out.
func (s *simulation) respond(l *link, id peer.RequestID, hashes []ledger.Hash) {
	if l.cut {
		return
	}
	v := l.to
	items := make([]ledger.Object, 0, len(hashes))
	for _, h := range hashes {
		i, ok := s.content.index[h]
		if !ok || !v.holds.has(i) {
			continue
		}
		data, _ := s.content.ledger.Get(h)
		items = append(items, ledger.Object{Hash: h, Data: data})
		v.bytesSent += int64(len(data))
	}
	kept, _ := resource.Truncate(len(items)) // rippled's reply cap
	answer := ledger.Objects{Items: items[:kept]}
	l.queued++
	s.clock.at(l.latency, func() { s.deliver(l, id, answer) })
}

// deliver hands an answer to the requester, counting the objects it
// already held.
func (s *simulation) deliver(l *link, id peer.RequestID, answer ledger.Objects) {
	if l.cut {
		return
	}
	l.queued--
	u := l.from
	for _, it := range answer.Items {
		u.received++
		if u.holds.has(s.content.index[it.Hash]) {
			u.duplicates++
		}
	}
	if u.fetching {
		_ = u.host.Deliver(l.to.id, id, answer) // late and unknown answers are the host's to count
	}
}

// refuse tells the requester that l.to's full queue turned its request
// away.
func (s *simulation) refuse(l *link, id peer.RequestID) {
	if l.cut {
		return
	}
	l.queued--
	u := l.from
	if r, ok := u.host.(fetch.Refuser); ok && u.fetching {
		_ = r.Refuse(l.to.id, id)
	}
}

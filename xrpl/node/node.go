package node

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// The ways a node is built, as ComponentReport.Way names them.
const (
	WayScheduler = "scheduler"
	WayOwnPeers  = "own peers"
)

// component is one component beside the fetch, either way.
type component struct {
	name     string
	priority int
	unit     string
	run      func(ctx context.Context)
	stop     func()
	rec      *recorder
}

// Components are the components Config asks for, running beside a fetch:
// on one scheduler (OnScheduler) or each on its own peers (NewRouter).
// Start them once the peers are connected, and Stop them when the fetch
// ends. The zero value is not usable.
type Components struct {
	way   string
	clock func() time.Time
	parts []component

	mu      sync.Mutex // guards the fields below
	cancel  context.CancelFunc
	started time.Time
	wg      sync.WaitGroup
}

// OnScheduler returns the components cfg asks for, each a sender of its
// own on s at its own priority (lookups at PriorityLookup, relay at
// PriorityRelay; give the fetch PriorityFetch). Give s cfg's clock. It
// fails with an error wrapping ErrBadConfig.
func OnScheduler(s *scheduler.Scheduler, cfg Config) (*Components, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Components{way: WayScheduler, clock: cfg.Clock.Now}
	if cfg.Lookups > 0 {
		l := &schedLookups{cfg: cfg, s: s, keys: newKeyPicker(cfg.Keys, cfg.Seed)}
		c.parts = append(c.parts, component{name: "lookups", priority: PriorityLookup, unit: "lookups/s", run: l.run, stop: l.stop, rec: &l.rec})
	}
	if cfg.Relay > 0 {
		r := &schedRelay{cfg: cfg, s: s, waiting: map[peer.ID]bool{}}
		c.parts = append(c.parts, component{name: "relay", priority: PriorityRelay, unit: "notifications/s", run: r.run, stop: func() {}, rec: &r.rec})
	}
	return c, nil
}

// Start starts the components ticking; a second call does nothing.
func (c *Components) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel, c.started = cancel, c.clock()
	for _, p := range c.parts {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			p.run(ctx)
		}()
	}
}

// Stop stops the components, waits for their goroutines, and returns a
// report of each, in the order lookups, relay. Answers that come after it
// are not counted. Stop without Start reports nothing sent.
func (c *Components) Stop() []ComponentReport {
	c.mu.Lock()
	cancel, started := c.cancel, c.started
	c.mu.Unlock()
	var wall time.Duration
	if cancel != nil {
		cancel()
		c.wg.Wait()
		wall = c.clock().Sub(started)
	}
	out := make([]ComponentReport, 0, len(c.parts))
	for _, p := range c.parts {
		p.stop()
		out = append(out, p.rec.report(p.name, c.way, p.priority, p.unit, wall))
	}
	return out
}

// Router is the node built the old way: a transport's Host that hands
// every connection to the fetch's own host (a fetch.Peerset or a
// fetch.Rippled) and to each component, which keeps its own table of the
// peers, and each answer to whoever issued its request ID. The
// components send straight to the peers, knowing nothing of each other.
// It is safe for concurrent use. Build one with NewRouter.
type Router struct {
	fetch   fetch.Host
	lookups *ownLookups // nil without lookups
	relay   *ownRelay   // nil without relay
	comps   *Components
}

// NewRouter returns the old-way node of the components cfg asks for
// beside the fetch whose host is fetchHost. It fails with an error
// wrapping ErrBadConfig.
func NewRouter(fetchHost fetch.Host, cfg Config) (*Router, error) {
	if fetchHost == nil {
		return nil, errors.Join(ErrBadConfig, errors.New("no fetch host"))
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	r := &Router{fetch: fetchHost, comps: &Components{way: WayOwnPeers, clock: cfg.Clock.Now}}
	if cfg.Lookups > 0 {
		r.lookups = &ownLookups{cfg: cfg, keys: newKeyPicker(cfg.Keys, cfg.Seed), pending: map[peer.RequestID]*ownLookup{}}
		r.comps.parts = append(r.comps.parts, component{name: "lookups", priority: PriorityLookup, unit: "lookups/s", run: r.lookups.run, stop: r.lookups.stop, rec: &r.lookups.rec})
	}
	if cfg.Relay > 0 {
		r.relay = &ownRelay{cfg: cfg}
		r.comps.parts = append(r.comps.parts, component{name: "relay", priority: PriorityRelay, unit: "notifications/s", run: r.relay.run, stop: r.relay.stop, rec: &r.relay.rec})
	}
	return r, nil
}

// Components returns the router's components, to start and stop.
func (r *Router) Components() *Components { return r.comps }

// Connect connects p to the fetch's host and, if it took it, to every
// component; it fails as the fetch's host does.
func (r *Router) Connect(p peer.Peer, channels int) error {
	if err := r.fetch.Connect(p, channels); err != nil {
		return err
	}
	if r.lookups != nil {
		r.lookups.connect(p)
	}
	if r.relay != nil {
		r.relay.connect(p)
	}
	return nil
}

// Disconnect takes the peer named id off every component and the fetch's
// host, and fails as the latter does.
func (r *Router) Disconnect(id peer.ID) error {
	if r.lookups != nil {
		r.lookups.disconnect(id)
	}
	if r.relay != nil {
		r.relay.disconnect(id)
	}
	return r.fetch.Disconnect(id)
}

// Deliver hands an answer to the lookups if its ID is theirs, and to the
// fetch's host otherwise (with the host's errors).
func (r *Router) Deliver(from peer.ID, id peer.RequestID, response any) error {
	if r.lookups != nil && id >= ownLookupIDs {
		r.lookups.deliver(from, id, response)
		return nil
	}
	return r.fetch.Deliver(from, id, response)
}

// Refuse hands a refusal to whoever issued id: to the fetch's host if it
// is a fetch.Refuser, or as the empty answer a peer without refusals
// sends otherwise.
func (r *Router) Refuse(from peer.ID, id peer.RequestID) error {
	if r.lookups != nil && id >= ownLookupIDs {
		r.lookups.deliver(from, id, ledger.Objects{})
		return nil
	}
	if rf, ok := r.fetch.(fetch.Refuser); ok {
		return rf.Refuse(from, id)
	}
	return r.fetch.Deliver(from, id, ledger.Objects{})
}

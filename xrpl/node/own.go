package node

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// ownLookupIDs is where the old-way lookups' request IDs begin: above any
// the fetch's own peer set issues, and within the 32 bits of rippled's
// TMGetObjectByHash.seq. The Router hands it every answer under an ID from
// here up.
const ownLookupIDs = 3 << 30

// ownPeers is a component's own table of the connected peers, in the
// order of their IDs, and its own set of them: the lowest IDs first,
// fetch.DefaultSetSize of them, one more after each timeout (the pattern
// of fetch.Peerset).
type ownPeers struct {
	conns map[peer.ID]peer.Peer
	order []peer.ID // every peer ever connected, by ID
	set   []peer.ID
}

func (p *ownPeers) connect(c peer.Peer) {
	if p.conns == nil {
		p.conns = map[peer.ID]peer.Peer{}
	}
	id := c.ID()
	p.conns[id] = c
	if i, found := slices.BinarySearch(p.order, id); !found {
		p.order = slices.Insert(p.order, i, id)
	}
	for len(p.set) < fetch.DefaultSetSize && p.widen() {
	}
}

func (p *ownPeers) disconnect(id peer.ID) { delete(p.conns, id) }

// widen adds the connected peer with the lowest ID not in the set.
func (p *ownPeers) widen() bool {
	for _, id := range p.order {
		if _, up := p.conns[id]; up && !slices.Contains(p.set, id) {
			p.set = append(p.set, id)
			return true
		}
	}
	return false
}

// ownLookups is the lookup component built the old way: its own peer set,
// asked in turn, its own request IDs and a timer of its own per request,
// each request sent the moment it is wanted, straight to the peer.
type ownLookups struct {
	cfg  Config
	keys *keyPicker
	rec  recorder

	mu      sync.Mutex // guards the fields below
	peers   ownPeers
	turn    int
	lastID  uint32
	pending map[peer.RequestID]*ownLookup
	stopped bool
}

// ownLookup is one old-way lookup, and its try in flight.
type ownLookup struct {
	hash   ledger.Hash
	wanted time.Time
	tries  int
	tried  []peer.ID
	to     peer.ID
	timer  *clock.Timer
}

func (c *ownLookups) run(ctx context.Context) {
	tick(ctx, c.cfg, every(c.cfg.Lookups), func(now time.Time) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.tryLocked(&ownLookup{hash: c.keys.next(), wanted: now})
	})
}

// tryLocked sends the lookup to the next peer of the set in turn that it
// has not tried, and arms its timer; with none to send to, it fails.
func (c *ownLookups) tryLocked(l *ownLookup) {
	if c.stopped {
		return
	}
	l.tries++
	for range len(c.peers.set) {
		id := c.peers.set[c.turn%len(c.peers.set)]
		c.turn++
		p, up := c.peers.conns[id]
		if !up || slices.Contains(l.tried, id) {
			continue
		}
		c.lastID = (c.lastID + 1) % (1 << 30)
		rid := peer.RequestID(ownLookupIDs + uint64(c.lastID))
		if p.Send(rid, ledger.GetObjects{Hashes: []ledger.Hash{l.hash}}) != nil {
			continue
		}
		c.rec.sent()
		l.to, l.tried = id, append(l.tried, id)
		l.timer = c.cfg.Clock.AfterFunc(c.cfg.LookupTimeout, func() { c.expire(rid) })
		c.pending[rid] = l
		return
	}
	c.rec.failure()
}

// againLocked tries l again, or gives up after its last try.
func (c *ownLookups) againLocked(l *ownLookup) {
	if l.tries >= c.cfg.LookupTries {
		c.rec.failure()
		return
	}
	c.tryLocked(l)
}

// expire runs on a try's timer: the try failed, and the set grows by one.
func (c *ownLookups) expire(rid peer.RequestID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.pending[rid]
	if !ok || c.stopped {
		return
	}
	delete(c.pending, rid)
	c.peers.widen()
	c.againLocked(l)
}

// deliver takes an answer under one of the component's IDs.
func (c *ownLookups) deliver(from peer.ID, rid peer.RequestID, response any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.pending[rid]
	if !ok || l.to != from || c.stopped {
		return
	}
	delete(c.pending, rid)
	l.timer.Stop()
	if objs, ok := response.(ledger.Objects); ok && holds(objs, l.hash) {
		c.rec.completed(c.cfg.Clock.Now().Sub(l.wanted), 0)
		return
	}
	c.againLocked(l)
}

func (c *ownLookups) connect(p peer.Peer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peers.connect(p)
}

func (c *ownLookups) disconnect(id peer.ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.peers.disconnect(id)
}

func (c *ownLookups) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	for _, l := range c.pending {
		l.timer.Stop()
	}
}

// ownRelay is the relay component built the old way: its own table of
// the connected peers, and every notification sent the moment it is
// wanted, straight to every peer, with nothing to hold it back.
type ownRelay struct {
	cfg Config
	rec recorder

	mu      sync.Mutex
	peers   ownPeers // guarded by mu; the set is not used: relay goes to every peer
	stopped bool
}

func (r *ownRelay) run(ctx context.Context) {
	tick(ctx, r.cfg, every(r.cfg.Relay), func(time.Time) {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, id := range r.peers.order {
			if p, up := r.peers.conns[id]; up && !r.stopped {
				if p.Send(0, Notice) == nil {
					r.rec.sent()
					r.rec.completed(0, 0)
				} else {
					r.rec.failure()
				}
			}
		}
	})
}

func (r *ownRelay) connect(p peer.Peer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peers.connect(p)
}

func (r *ownRelay) disconnect(id peer.ID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.peers.disconnect(id)
}

func (r *ownRelay) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
}

package simnet

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/penalty"
	"github.com/peersched/peersched/xrpl/resource"
)

// Config configures a Network.
type Config struct {
	// Ledger is what every peer serves. Required.
	Ledger *ledger.Ledger
	// Clock measures every delay; nil means the real clock. Tests pass a
	// mock (created inside their synctest bubble) and advance it.
	Clock clock.Clock
	// Seed seeds every random choice. Each peer draws from its own source,
	// seeded by Seed and its ID, so adding a peer does not change what the
	// others do.
	Seed uint64

	// Deliver hands a response to the host, which passes it on to the
	// scheduler's Deliver. Required. id is whatever ID the peer answered
	// under: normally the request's, but faults can change it.
	Deliver func(from peer.ID, id peer.RequestID, response any)
	// Refuse, if set, hands the host a peer's refusal of request id: a
	// request its full Service queue turned away under OverflowReject is
	// refused through Refuse, at the instant its empty answer would have
	// arrived, instead of answered through Deliver. The host passes it on
	// to the scheduler's Refuse. Nil keeps the empty answers.
	Refuse func(from peer.ID, id peer.RequestID)
	// OnDisconnect, if set, is called when a peer goes down; the host then
	// disconnects it from the scheduler. The peer is already down when it
	// runs: its Send fails and its responses still in flight are dropped.
	OnDisconnect func(p *Peer)
	// OnReconnect, if set, is called when a peer comes back up, with nothing
	// in flight from before; the host then connects it to the scheduler
	// again. The peer is already up when it runs.
	OnReconnect func(p *Peer)

	// RedialMin, RedialMax and RedialReset model the host's redials of a
	// peer that cut it off for its charges (see Peer), as tcpnet's Client
	// makes them: the first after RedialMin, doubling after each refused
	// one up to RedialMax, each jittered down by up to half; a cut after a
	// connection that lasted RedialReset starts again from RedialMin.
	// Zero means DefaultRedialMin, DefaultRedialMax and
	// DefaultRedialReset.
	RedialMin, RedialMax, RedialReset time.Duration
}

// Defaults for the zero redial fields of Config: tcpnet.Client's.
const (
	DefaultRedialMin   = 50 * time.Millisecond
	DefaultRedialMax   = 30 * time.Second
	DefaultRedialReset = 10 * time.Second
)

// Errors from the network. They can be matched with errors.Is.
var (
	// ErrClosed is returned by Send and AddPeer once the network is closed.
	ErrClosed = errors.New("simnet: network closed")
	// ErrDisconnected is returned by Send while the peer is down.
	ErrDisconnected = errors.New("simnet: peer disconnected")
	// ErrUnsupported is returned by Send for a value that is no message of
	// the protocol: not a ledger.GetObjects (or a non-nil pointer to one),
	// a wire.Ping or wire.Pong, a ledger.Objects or a wire.Frame (see
	// Peer.Send). Notifications (request ID 0) may carry anything.
	ErrUnsupported = errors.New("simnet: unsupported message")
	// ErrDuplicatePeer is returned by AddPeer for an ID already in use.
	ErrDuplicatePeer = errors.New("simnet: duplicate peer ID")
	// ErrBadConfig is returned by New for a Config without a Ledger or Deliver.
	ErrBadConfig = errors.New("simnet: bad config")
)

// Network is a set of simulated peers sharing one clock, one event queue and
// one timer. It is safe for concurrent use.
//
// Its callbacks (Deliver, Refuse, OnDisconnect, OnReconnect) run one at a time, in
// order of (time, scheduling order), on the goroutine of the clock's timer:
// never concurrently with each other, never while the network holds its
// lock, and never from inside Send, which only queues. They may call any
// method of the network or its peers, Close included.
//
// Create a Network with New; the zero value is not usable.
type Network struct {
	// Set by New and never changed.
	ledger  *ledger.Ledger
	clock   clock.Clock
	seed    uint64
	deliver func(peer.ID, peer.RequestID, any)
	refuse  func(peer.ID, peer.RequestID) // nil: rejections are empty answers
	onDown  func(*Peer)
	onUp    func(*Peer)
	redial  struct{ min, max, reset time.Duration }

	mu sync.Mutex
	// The following fields, and the mutable fields of every Peer, are
	// guarded by mu.
	closed   bool
	peers    map[peer.ID]*Peer
	order    []*Peer // in AddPeer order
	queue    eventQueue
	seq      uint64       // the last event sequence number handed out
	timer    *clock.Timer // the one armed timer, or nil
	timerAt  time.Time    // when timer fires
	timerGen uint64       // names timer to its callback, so a stale one is told apart
	draining bool         // a goroutine is running due events (see fire)
}

// New returns a network with no peers. It fails with ErrBadConfig if cfg has
// no Ledger or no Deliver.
func New(cfg Config) (*Network, error) {
	if cfg.Ledger == nil || cfg.Deliver == nil {
		return nil, fmt.Errorf("%w: Ledger and Deliver are required", ErrBadConfig)
	}
	c := cfg.Clock
	if c == nil {
		c = clock.New()
	}
	n := &Network{
		ledger:  cfg.Ledger,
		clock:   c,
		seed:    cfg.Seed,
		deliver: cfg.Deliver,
		refuse:  cfg.Refuse,
		onDown:  cfg.OnDisconnect,
		onUp:    cfg.OnReconnect,
		peers:   map[peer.ID]*Peer{},
	}
	n.redial.min = cmp.Or(cfg.RedialMin, DefaultRedialMin)
	n.redial.max = max(cmp.Or(cfg.RedialMax, DefaultRedialMax), n.redial.min)
	n.redial.reset = cmp.Or(cfg.RedialReset, DefaultRedialReset)
	return n, nil
}

// AddPeer adds a connected peer that behaves as prof says; times in prof are
// measured from now. The host connects the returned peer to the scheduler
// itself (OnReconnect is only for comebacks). AddPeer fails with an error
// wrapping ErrBadProfile, ErrDuplicatePeer or ErrClosed, and then adds
// nothing.
func (n *Network) AddPeer(id peer.ID, prof Profile) (*Peer, error) {
	if err := prof.validate(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, ErrClosed
	}
	if _, ok := n.peers[id]; ok {
		return nil, fmt.Errorf("%w: %q", ErrDuplicatePeer, id)
	}
	now := n.clock.Now()
	prof.Slowness = append([]Slowdown(nil), prof.Slowness...)
	prof.Outages = append([]Outage(nil), prof.Outages...)
	if prof.RandomOutages != nil {
		r := *prof.RandomOutages
		prof.RandomOutages = &r
	}
	if prof.LateBy == 0 {
		prof.LateBy = DefaultLateBy
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	stream := h.Sum64()
	p := &Peer{
		net:       n,
		id:        id,
		prof:      prof,
		added:     now,
		traffic:   rand.New(rand.NewPCG(n.seed, stream)),
		outages:   rand.New(rand.NewPCG(n.seed, ^stream)),
		redials:   rand.New(rand.NewPCG(^n.seed, stream)),
		connected: true,
		upSince:   now,
		accounts:  resource.NewAccounts(n.clock, !prof.LimitsOff),
	}
	if sv := prof.Service; sv.Workers > 0 {
		p.service = NewServiceQueue(sv.Workers, sv.QueueLimit)
	}
	n.peers[id] = p
	n.order = append(n.order, p)
	for _, o := range prof.Outages {
		n.pushLocked(event{at: now.Add(o.At), kind: disconnectEvent, peer: p})
		if o.For > 0 {
			n.pushLocked(event{at: now.Add(o.At + o.For), kind: reconnectEvent, peer: p})
		}
	}
	if r := prof.RandomOutages; r != nil {
		n.pushLocked(event{at: now.Add(p.expLocked(r.MeanUp)), kind: disconnectEvent, peer: p, random: true})
	}
	n.armLocked(now)
	return p, nil
}

// Peer returns the peer named id, if it was added.
func (n *Network) Peer(id peer.ID) (*Peer, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p, ok := n.peers[id]
	return p, ok
}

// Peers returns every peer, in the order they were added.
func (n *Network) Peers() []*Peer {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Peer(nil), n.order...)
}

// Close stops the network: it cancels its timer and every future event, and
// from then on Send and AddPeer fail with ErrClosed. No callback starts after
// Close returns, except that a callback already taken from the queue by
// another goroutine when Close was called may still run (Close does not wait
// for it, so that callbacks may call Close). Once that has returned the
// network owns no goroutine. Close is idempotent.
func (n *Network) Close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	n.closed = true
	if n.timer != nil {
		n.timer.Stop()
		n.timer = nil
	}
	n.queue = eventQueue{}
}

// pushLocked schedules e. The caller holds n.mu and calls armLocked after.
func (n *Network) pushLocked(e event) {
	n.seq++
	e.seq = n.seq
	n.queue.push(e)
}

// armLocked makes the timer fire at the earliest event, if there is one and
// no drain is under way (the drain re-arms when it finishes). The caller
// holds n.mu.
func (n *Network) armLocked(now time.Time) {
	if n.closed || n.draining {
		return
	}
	if n.queue.len() == 0 {
		if n.timer != nil {
			n.timer.Stop()
			n.timer = nil
		}
		return
	}
	next := n.queue.peek()
	if n.timer != nil && n.timerAt.Equal(next) {
		return
	}
	if n.timer != nil {
		n.timer.Stop()
	}
	// Never a negative delay: the mock clock would move its time backwards
	// to run such a timer.
	d := max(next.Sub(now), 0)
	n.timerGen++
	gen := n.timerGen
	n.timer = n.clock.AfterFunc(d, func() { n.fire(gen) })
	n.timerAt = next
}

// fire runs every due event in (time, seq) order, calling the host back
// without the lock held, then re-arms the timer. If another goroutine is
// already draining, that one will see any event this call was meant for.
func (n *Network) fire(gen uint64) {
	n.mu.Lock()
	if gen == n.timerGen {
		n.timer = nil // this timer has fired; a stale one leaves the current alone
	}
	if n.closed || n.draining {
		n.mu.Unlock()
		return
	}
	n.draining = true
	for !n.closed {
		e, ok := n.queue.popDue(n.clock.Now())
		if !ok {
			break
		}
		call := n.applyLocked(e)
		if call == nil {
			continue
		}
		n.mu.Unlock()
		call()
		n.mu.Lock()
	}
	n.draining = false
	n.armLocked(n.clock.Now())
	n.mu.Unlock()
}

// applyLocked changes the network's state as e says and returns the host
// callback e causes, or nil. The caller holds n.mu.
func (n *Network) applyLocked(e event) func() {
	p := e.peer
	switch e.kind {
	case deliverEvent:
		if !p.connected || p.epoch != e.epoch {
			p.stats.Dropped++
			return nil
		}
		p.queued--
		p.stats.Delivered++
		from, id, msg := p.id, peer.RequestID(e.id), e.msg
		if e.refusal {
			p.stats.Refusals++
			return func() { n.refuse(from, id) }
		}
		return func() { n.deliver(from, id, msg) }
	case disconnectEvent:
		if e.random {
			n.pushLocked(event{at: e.at.Add(p.expLocked(p.prof.RandomOutages.MeanDown)), kind: reconnectEvent, peer: p, random: true})
		}
		p.outage = true
		if !p.connected {
			return nil // cut for charges already: the host knows
		}
		p.downLocked()
		return n.onDownLocked(p)
	case reconnectEvent:
		if e.random {
			n.pushLocked(event{at: e.at.Add(p.expLocked(p.prof.RandomOutages.MeanUp)), kind: disconnectEvent, peer: p, random: true})
		}
		p.outage = false
		if p.connected || p.cut {
			return nil // a peer that cut the host off waits for its redial
		}
		return n.upLocked(p, e.at)
	case cutEvent:
		if p.connected || e.epoch != p.epoch {
			return nil
		}
		return n.onDownLocked(p)
	case redialEvent:
		if !p.cut {
			return nil
		}
		p.stats.Redials++
		if p.outage || !p.accounts.Admit(hostKey) {
			// Refused, and charged FeeDrop for it, or the peer is
			// away: the host tries again, later.
			p.strikes++
			n.pushLocked(event{at: e.at.Add(n.redialWaitLocked(p)), kind: redialEvent, peer: p})
			return nil
		}
		p.cut = false
		return n.upLocked(p, e.at)
	}
	return nil
}

// onDownLocked returns the host's OnDisconnect call for p, or nil.
func (n *Network) onDownLocked(p *Peer) func() {
	if n.onDown == nil {
		return nil
	}
	return func() { n.onDown(p) }
}

// upLocked brings p up at now and returns the host's OnReconnect call, or
// nil. The caller holds n.mu.
func (n *Network) upLocked(p *Peer, now time.Time) func() {
	p.connected = true
	p.upSince = now
	p.stats.Reconnects++
	if n.onUp == nil {
		return nil
	}
	return func() { n.onUp(p) }
}

// redialWaitLocked is the wait before the host's next redial of p, after
// p.strikes failures in a row, as tcpnet.Client computes it. The caller
// holds n.mu.
func (n *Network) redialWaitLocked(p *Peer) time.Duration {
	return penalty.Jittered(penalty.Backoff(n.redial.min, n.redial.max, p.strikes), p.redials.Float64())
}

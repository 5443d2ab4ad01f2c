package simnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/wire"
)

// Peer is one simulated peer. It implements peer.Peer and is safe for
// concurrent use. Get one from Network.AddPeer; the zero value is not usable.
//
// Like a rippled peer, by default, it keeps accounts of what the host costs
// it (package resource), charged as each message is handled: a request or a
// Ping costs resource.FeeQuery, a reply or Pong sent to it
// resource.FeeUselessData, a notification (anything sent under request ID
// 0, a wire.Frame included) resource.FeeTrivial, and a wire.Frame of a
// type it does not decode, sent under a request ID, nothing (it skips
// it). When the
// host's balance reaches resource.DropThreshold the peer cuts the host off:
// it goes down at once, the answers it owed are lost, and the host is told
// through OnDisconnect (Down says why). The host then redials it as
// tcpnet's Client would (Config.RedialMin): each redial is refused, and
// charged resource.FeeDrop, while the balance stays at the threshold, and
// the first one let in brings the peer back through OnReconnect. A request
// that arrives while resource.DropSendQueue of its answers are queued
// (scheduled and not yet delivered) is dropped unanswered, charged only
// resource.FeeTrivial, and an answer carries at most
// resource.MaxReplyObjects objects. Profile.LimitsOff turns the cuts and
// drops off.
type Peer struct {
	net   *Network
	id    peer.ID
	prof  Profile   // a private copy, with defaults filled in
	added time.Time // when AddPeer ran: the origin of the profile's schedules

	// The following fields are guarded by net.mu.
	traffic   *rand.Rand // draws for requests: loss, faults, latency, missing objects
	outages   *rand.Rand // draws for random outages, apart so that traffic does not move them
	redials   *rand.Rand // draws for the host's redials' jitter, apart from both
	connected bool       // !outage && !cut
	outage    bool       // down for a Profile outage
	cut       bool       // down because it cut the host off for its charges, until a redial is let in
	upSince   time.Time  // when it last came up, for the redials' back-off
	strikes   int        // the host's redials and short connections in a row (see redialWaitLocked)
	queued    int        // answers scheduled on the current connection and not yet delivered
	accounts  *resource.Accounts
	epoch     uint64    // counts disconnections; a response carries the epoch it was sent in
	linkFree  time.Time // when the uplink finishes its last queued response
	lastID    uint64    // the previous request's ID, for WrongID; 0 before the first
	stats     Stats

	service     *ServiceQueue   // nil without Profile.Service.Workers
	queueDelays []time.Duration // each served request's queueing delay, in arrival order
}

var _ peer.Peer = (*Peer)(nil)

// ID returns the peer's ID.
func (p *Peer) ID() peer.ID { return p.id }

// Connected reports whether the peer is up.
func (p *Peer) Connected() bool {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	return p.connected
}

// Stats returns a snapshot of the peer's counters.
func (p *Peer) Stats() Stats {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	st := p.stats
	st.Resources = p.accounts.Stats()
	return st
}

// DownReason says why a peer is down.
type DownReason string

// Why a peer is down, as Peer.Down says.
const (
	// DownOutage: a Profile outage, scheduled or random.
	DownOutage DownReason = "outage"
	// DownCharges: the peer cut the host off because its balance reached
	// resource.DropThreshold (rippled's "charge: Resources"); the host's
	// redials are refused until it decays.
	DownCharges DownReason = "cut for charges"
)

// Down returns why the peer is down, or "" while it is up. In OnDisconnect
// it says why the peer went down.
func (p *Peer) Down() DownReason {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	switch {
	case p.connected:
		return ""
	case p.cut:
		return DownCharges
	}
	return DownOutage
}

// hostKey is the account of the host at every peer: the one remote a
// simulated peer has.
const hostKey = "host"

// QueueDelays returns the queueing delay of every request the peer's
// Service admitted (Stats.Served of them), in the order they arrived: how
// long each waited for a worker. It is a copy, empty for a peer without a
// Service. Quantile turns it into percentiles. The peer keeps every delay
// for the network's life, 8 bytes a served request: fine for experiments,
// not for a peer served for days.
func (p *Peer) QueueDelays() []time.Duration {
	p.net.mu.Lock()
	defer p.net.mu.Unlock()
	return append([]time.Duration(nil), p.queueDelays...)
}

// Send queues a message for the peer; it never blocks and never calls the
// host back (answers come later, from the network's timer). A notification
// (requestID 0) is accepted and ignored. A request must be a
// ledger.GetObjects or a non-nil *ledger.GetObjects; the peer decides, with
// its profile's probabilities, whether to drop it, when to answer, and how
// to misbehave. A wire.Ping is answered with a wire.Pong under its ID after
// a latency; a ledger.Objects or a wire.Pong is accepted and ignored (and
// charged: the peer never asked for it); a wire.Frame is decoded as the
// peer would read it off the wire, and skipped if its type is one the peer
// does not decode. Every message is charged to the host as the Peer doc
// says, and the charge may cut the host off: Send then still returns nil
// (the message was received), and the peer is down from then on.
//
// Send fails with ErrClosed, ErrDisconnected (the peer is down: the host has
// been or is about to be told through OnDisconnect) or ErrUnsupported (a
// value that is no message of the protocol), and then queues nothing,
// charges nothing and draws no randomness.
func (p *Peer) Send(requestID peer.RequestID, message any) error {
	n := p.net
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return ErrClosed
	}
	if !p.connected {
		p.stats.Refused++
		return fmt.Errorf("%w: %q", ErrDisconnected, p.id)
	}
	now := n.clock.Now()
	if requestID == 0 {
		p.stats.Notifications++
		p.chargeLocked(now, resource.FeeTrivial)
		return nil
	}
	fee, err := p.receiveLocked(now, uint64(requestID), message)
	if err != nil {
		p.stats.Refused++
		return err
	}
	p.chargeLocked(now, fee)
	n.armLocked(now)
	return nil
}

// receiveLocked handles message, sent under id, and returns what it costs
// the host, or ErrUnsupported. The caller holds p.net.mu.
func (p *Peer) receiveLocked(now time.Time, id uint64, message any) (resource.Fee, error) {
	if f, ok := message.(wire.Frame); ok {
		fid, msg, err := wire.DecodeMessage(f, 0)
		switch {
		case errors.Is(err, wire.ErrUnknownType):
			p.stats.Skipped++
			return 0, nil
		case err != nil:
			return 0, fmt.Errorf("%w: %v", ErrUnsupported, err)
		}
		id, message = fid, msg
	}
	switch m := message.(type) {
	case wire.Ping:
		latency := scale(p.prof.Latency.Sample(p.traffic), slowFactor(p.prof.Slowness, now.Sub(p.added)))
		at, free := transmit(now.Add(latency), p.linkFree, wireSize(id, wire.Pong{}), p.prof.Bandwidth)
		p.linkFree = free
		p.pushAnswerLocked(at, id, wire.Pong{})
		return resource.FeeQuery, nil
	case wire.Pong, ledger.Objects, *ledger.Objects:
		if m, ok := m.(*ledger.Objects); ok && m == nil {
			break
		}
		p.stats.Useless++
		return resource.FeeUselessData, nil
	}
	req, ok := ledger.AsGetObjects(message)
	if !ok {
		return 0, fmt.Errorf("%w: %T", ErrUnsupported, message)
	}
	if !p.prof.LimitsOff && resource.Busy(p.queued) {
		// Dropped unanswered, as rippled drops a query when its send
		// queue is long, and charged only the trivial fee for it.
		p.stats.Requests++
		p.stats.BusyDrops++
		return resource.FeeTrivial, nil
	}
	p.requestLocked(now, id, req)
	return resource.FeeQuery, nil
}

// chargeLocked charges the host fee at now, and cuts it off if its balance
// reaches the drop threshold. The caller holds p.net.mu.
func (p *Peer) chargeLocked(now time.Time, fee resource.Fee) {
	if fee == 0 || p.accounts.Charge(hostKey, fee) != resource.Drop {
		return
	}
	n := p.net
	p.cut = true
	p.downLocked()
	// The host is told from the timer, as for an outage (Send never calls
	// back), and redials as its transport would.
	n.pushLocked(event{at: now, kind: cutEvent, peer: p, epoch: p.epoch})
	if now.Sub(p.upSince) >= n.redial.reset {
		p.strikes = 0
	}
	p.strikes++
	n.pushLocked(event{at: now.Add(n.redialWaitLocked(p)), kind: redialEvent, peer: p})
	n.armLocked(now)
}

// downLocked takes p down: the answers in flight on its connection are
// lost with it, and its service queue empties. The caller holds p.net.mu.
func (p *Peer) downLocked() {
	p.connected = false
	p.epoch++ // responses in flight on the old connection are dropped
	p.queued = 0
	p.linkFree = time.Time{}
	if p.service != nil {
		p.service.Reset() // the requests it held are lost with the connection
	}
	p.stats.Disconnects++
}

// requestLocked decides the fate of one request and schedules its answers.
// The caller holds p.net.mu. The draws happen in a fixed order (loss, fault,
// latency, missing objects, then any the fault needs) so that a seed replays;
// a request that overflows the peer's queue draws after loss only what its
// Overflow needs.
func (p *Peer) requestLocked(now time.Time, id uint64, req ledger.GetObjects) {
	p.stats.Requests++
	previous := p.lastID
	p.lastID = id
	r := p.traffic

	if r.Float64() < p.prof.Loss {
		p.stats.Lost++
		return
	}
	slow := slowFactor(p.prof.Slowness, now.Sub(p.added))
	if p.service != nil && p.service.Full(now) {
		p.overflowLocked(now, id, req, slow)
		return
	}
	fault, faulty := p.prof.Faults.pick(r.Float64())
	latency := scale(p.prof.Latency.Sample(r), slow)
	resp := p.answerLocked(req)
	ready := now
	if p.service != nil {
		ready = p.serveLocked(now, id, req, resp, slow)
	}

	if faulty && fault == Ignore {
		p.stats.Faults[Ignore]++
		return
	}
	var msg any = resp
	if faulty && fault == WrongType {
		msg = req
	}
	size := wireSize(id, msg)
	at, free := transmit(ready.Add(latency), p.linkFree, size, p.prof.Bandwidth)
	p.linkFree = free

	answerID := id
	if faulty {
		switch fault {
		case WrongID:
			answerID = previous
			if answerID == 0 {
				answerID = id + 1
			}
		case UnknownID:
			answerID = 1<<63 | r.Uint64()
		case Late:
			at = at.Add(p.prof.LateBy)
		case Duplicate:
			again := at.Add(p.prof.Latency.Sample(r))
			p.pushAnswerLocked(at, answerID, msg)
			at = again
		case Corrupt:
			var ok bool
			if msg, ok = corrupt(resp, r); !ok {
				faulty = false
			}
		}
	}
	if faulty {
		p.stats.Faults[fault]++
	}
	p.pushAnswerLocked(at, answerID, msg)
}

// wireSize is msg's size on the wire under request id, as TCP would carry
// it. A scheduler without Config.RequestIDs issues IDs above rippled's
// 32-bit seq, which wire.MessageSize cannot encode (it says 0); a simulated
// peer answers them all the same, and charges the size of the seq the wire
// would carry, the ID's low 32 bits.
func wireSize(id uint64, msg any) int { return wire.MessageSize(id&wire.MaxID, msg) }

// serveLocked puts a request that arrived at now in the peer's service
// queue, records its queueing delay, and returns when its answer is ready
// to leave. Every request the queue admits takes a worker, including one
// the peer will then ignore. The caller holds p.net.mu.
func (p *Peer) serveLocked(now time.Time, id uint64, req ledger.GetObjects, resp ledger.Objects, slow float64) time.Time {
	size := wireSize(id, resp)
	d := scale(p.prof.Service.Time(len(req.Hashes), size), slow)
	start, end := p.service.Serve(now, d)
	wait := start.Sub(now)
	p.stats.Served++
	p.stats.QueueDelay += wait
	p.stats.MaxQueueDelay = max(p.stats.MaxQueueDelay, wait)
	p.queueDelays = append(p.queueDelays, wait)
	return end
}

// overflowLocked turns away a request that found the service queue full,
// as Service.Overflow says. The caller holds p.net.mu.
func (p *Peer) overflowLocked(now time.Time, id uint64, req ledger.GetObjects, slow float64) {
	p.stats.Overflowed++
	if p.prof.Service.Overflow != OverflowReject {
		return
	}
	latency := scale(p.prof.Latency.Sample(p.traffic), slow)
	// Every object is missing, so the reply leaves them all out, as rippled
	// leaves out what it lacks. A host that can tell the scheduler of a
	// refusal gets one instead, on the same wire and at the same instant:
	// the peer's "not now" is the same message, only read for what it is.
	resp := ledger.Objects{}
	at, free := transmit(now.Add(latency), p.linkFree, wireSize(id, resp), p.prof.Bandwidth)
	p.linkFree = free
	if p.net.refuse != nil {
		p.stats.Answers++
		p.queued++
		p.net.pushLocked(event{at: at, kind: deliverEvent, peer: p, epoch: p.epoch, id: id, refusal: true})
		return
	}
	p.pushAnswerLocked(at, id, resp)
}

// answerLocked builds the honest answer to req, except that with probability
// Profile.Missing each object is missing, and left out as rippled leaves out
// what it lacks. The caller holds p.net.mu.
func (p *Peer) answerLocked(req ledger.GetObjects) ledger.Objects {
	resp := p.net.ledger.Answer(req)
	if p.prof.Missing > 0 {
		kept := resp.Items[:0]
		for _, it := range resp.Items {
			if p.traffic.Float64() >= p.prof.Missing {
				kept = append(kept, it)
			}
		}
		resp.Items = kept
	}
	p.stats.Missing += len(req.Hashes) - len(resp.Items)
	// rippled stops at MaxReplyObjects objects found.
	if kept, cut := resource.Truncate(len(resp.Items)); cut > 0 {
		resp.Items = resp.Items[:kept]
		p.stats.Truncated++
	}
	return resp
}

// pushAnswerLocked schedules the delivery of msg under id at at, on the
// peer's current connection. The caller holds p.net.mu.
func (p *Peer) pushAnswerLocked(at time.Time, id uint64, msg any) {
	p.stats.Answers++
	p.queued++
	p.net.pushLocked(event{at: at, kind: deliverEvent, peer: p, epoch: p.epoch, id: id, msg: msg})
}

// expLocked draws an exponentially distributed duration with the given mean
// from the outage source, at least 1ns so that an outage chain always moves
// forward in time. The caller holds p.net.mu.
func (p *Peer) expLocked(mean time.Duration) time.Duration {
	d := time.Duration(p.outages.ExpFloat64() * float64(mean))
	return min(max(d, 1), MaxLatency)
}

// corrupt returns a copy of resp in which one object, chosen with r, has one
// byte flipped; false if no object has a byte.
func corrupt(resp ledger.Objects, r *rand.Rand) (ledger.Objects, bool) {
	var present []int
	for i, it := range resp.Items {
		if len(it.Data) > 0 {
			present = append(present, i)
		}
	}
	if len(present) == 0 {
		return resp, false
	}
	i := present[r.IntN(len(present))]
	items := append([]ledger.Object(nil), resp.Items...)
	data := append([]byte(nil), items[i].Data...)
	data[r.IntN(len(data))] ^= 0xff
	items[i].Data = data
	return ledger.Objects{Items: items}, true
}

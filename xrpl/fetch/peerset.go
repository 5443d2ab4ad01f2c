package fetch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/xrpl/ledger"
)

// ErrPeersetStopped is returned by a Peerset's Deliver and Refuse once its
// Run has returned.
var ErrPeersetStopped = errors.New("fetch: peerset fetch has ended")

// Peerset fetches a ledger the way a component did before the scheduler
// (the seed's "motivation"): it keeps its own fixed set of peers, starting
// with Config.SetSize of them (the connected peers with the lowest IDs when
// Run starts, or the first to connect after) and adding one more, the
// lowest ID not in the set, only when a request times out, when a peer of
// the set strikes out (Config.Penalty's Strikes bad answers in a row:
// judged useless, or lacking what it is asked for, and benched for a long
// back-off; a peer with fewer strikes only waits out its back-off), or when
// every peer of the set has gone, which it
// notices when it tries to send; it numbers its own requests and arms its own timer for
// each; and it is not told when a peer disconnects, so a request to a peer
// that has gone fails only when its timer fires. It keeps at most as many
// requests in flight to a peer as the channels the peer connected with, so
// that the comparison with Run is at the same per-peer load.
//
// A Peerset is a Host: wire a transport's connections and responses to it
// instead of to a scheduler. It is safe for concurrent use. Like the
// components it stands for, it calls Peer.Send with its own lock held, so a
// peer's Send must not call back into it (simnet's and tcpnet's only queue). Create one with
// NewPeerset; the zero value is not usable. It fetches once: after Run
// returns, Deliver fails with ErrPeersetStopped and nothing more is sent.
type Peerset struct {
	*state

	// The following fields are guarded by mu.
	running bool
	conns   map[peer.ID]*psConn // connected peers: the overlay's table, not the set
	order   []peer.ID           // every peer ever connected, by ID
	seen    map[peer.ID]bool    // the peers in order
	set     []peer.ID           // the fetch's own peers
	inSet   map[peer.ID]bool
	lastID  uint64
	pending map[uint64]*psRequest
	ended   map[uint64]bool // request IDs that ended: true if answered, false if timed out
	dropped Dropped
}

type psConn struct {
	p        peer.Peer
	channels int
}

type psRequest struct {
	to     peer.ID
	hashes []ledger.Hash
	sentAt time.Time
	timer  *clock.Timer
}

// NewPeerset returns a Peerset that will fetch the ledger cfg names when Run
// is called. It fails with an error wrapping ErrBadConfig.
func NewPeerset(cfg Config) (*Peerset, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ps := &Peerset{
		state:   newState(cfg),
		conns:   make(map[peer.ID]*psConn),
		inSet:   make(map[peer.ID]bool),
		seen:    make(map[peer.ID]bool),
		pending: make(map[uint64]*psRequest),
		ended:   make(map[uint64]bool),
	}
	ps.verdicts.wake = func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		ps.pumpLocked()
	}
	return ps, nil
}

// Connect makes p available; if the set is not full yet it joins the set.
// It fails, changing nothing, with peer.ErrNilPeer, peer.ErrBadChannels or
// peer.ErrAlreadyConnected.
func (ps *Peerset) Connect(p peer.Peer, channels int) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	if channels < 1 {
		return peer.ErrBadChannels
	}
	id := p.ID()
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.conns[id]; ok {
		return fmt.Errorf("connect %q: %w", id, peer.ErrAlreadyConnected)
	}
	ps.conns[id] = &psConn{p: p, channels: channels}
	if !ps.seen[id] {
		ps.seen[id] = true
		i, _ := slices.BinarySearch(ps.order, id)
		ps.order = slices.Insert(ps.order, i, id)
	}
	if ps.running && len(ps.set) < ps.cfg.SetSize {
		ps.addLocked(id)
	}
	ps.pumpLocked()
	return nil
}

// Disconnect forgets the connection of the peer named id. Its requests in
// flight are not failed: as before the scheduler, the fetch learns of the
// loss only when their timers fire. It fails with peer.ErrUnknownPeer.
func (ps *Peerset) Disconnect(id peer.ID) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if _, ok := ps.conns[id]; !ok {
		return fmt.Errorf("disconnect %q: %w", id, peer.ErrUnknownPeer)
	}
	delete(ps.conns, id)
	return nil
}

// Deliver hands the Peerset a response that the peer named from sent under
// request id. It is accepted only for a pending request sent to from;
// otherwise it is counted and dropped, and Deliver returns why, with the
// scheduler's errors: receiver.ErrUnknownRequest, ErrWrongPeer,
// ErrDuplicateResponse or ErrLateResponse; or ErrPeersetStopped.
func (ps *Peerset) Deliver(from peer.ID, id peer.RequestID, response any) error {
	ps.mu.Lock()
	r, err := ps.claimLocked(from, id)
	ps.mu.Unlock()
	if err != nil {
		return err
	}

	// Claimed: its timer finds nothing to do. Hash without the lock.
	now := ps.cfg.Clock.Now()
	results, valid := examine(r.hashes, response, make([]itemResult, 0, len(r.hashes)))
	reuse(ps.cfg.Base, results)
	ps.waitToApply() // outside the lock: a store far behind slows the answers

	ps.mu.Lock()
	if ps.finished {
		ps.mu.Unlock()
		return nil
	}
	named, struck := len(ps.verdicts.useless), ps.verdicts.struckOut
	ps.answeredLocked(r.hashes, from, results, valid, now.Sub(r.sentAt), now)
	if len(ps.verdicts.useless) > named || ps.verdicts.struckOut > struck {
		// As for a timeout: the set lost a peer that serves, for good
		// or for a long back-off, so it takes one more.
		ps.widenLocked()
	}
	ps.pumpLocked()
	useless := ps.takeDisconnectsLocked()
	ps.mu.Unlock()
	ps.disconnect(useless) // the host's Disconnect may call ours, which locks
	return nil
}

// Refuse tells the Peerset that the peer named from refused request id
// (see Refuser). The refusal is accepted, or counted and dropped, as
// Deliver accepts or drops a response, with the same errors; it is the
// peer's one answer, so a response after it is a duplicate. An accepted
// refusal fails the request at once: its hashes go back to be asked again,
// of another peer of the set if one can take them, and the Report counts
// it in Refused. Unlike a timeout, it does not widen the set: the peer is
// there, only busy.
func (ps *Peerset) Refuse(from peer.ID, id peer.RequestID) error {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, err := ps.claimLocked(from, id)
	if err != nil {
		return err
	}
	ps.failedLocked(r.hashes, from, failRefused)
	ps.pumpLocked()
	return nil
}

// claimLocked takes request id, sent to from, out of the pending requests
// and stops its timer, recording it as answered; or it counts why it
// cannot and returns the error.
func (ps *Peerset) claimLocked(from peer.ID, id peer.RequestID) (*psRequest, error) {
	if ps.finished {
		return nil, ErrPeersetStopped
	}
	r, ok := ps.pending[uint64(id)]
	if !ok {
		answered, ended := ps.ended[uint64(id)]
		switch {
		case ended && answered:
			ps.dropped.Duplicate++
			return nil, receiver.ErrDuplicateResponse
		case ended:
			ps.dropped.Late++
			return nil, receiver.ErrLateResponse
		default:
			ps.dropped.Unknown++
			return nil, receiver.ErrUnknownRequest
		}
	}
	if r.to != from {
		ps.dropped.WrongPeer++
		return nil, receiver.ErrWrongPeer
	}
	delete(ps.pending, uint64(id))
	ps.ended[uint64(id)] = true
	r.timer.Stop()
	return r, nil
}

// Run fetches the ledger from the peers connected now and later, and returns
// as Run (the scheduler strategy) does: a Report, and nil or an
// *IncompleteError. It may be called once.
func (ps *Peerset) Run(ctx context.Context) (Report, error) {
	start := ps.cfg.Clock.Now()
	ps.mu.Lock()
	if ps.running || ps.finished {
		ps.mu.Unlock()
		return Report{}, errors.New("fetch: Peerset.Run called twice")
	}
	ps.running = true
	ps.beginLocked(start)
	for len(ps.set) < ps.cfg.SetSize && ps.widenLocked() { // the lowest IDs first
	}
	ps.pumpLocked()
	ps.mu.Unlock()

	w := ps.watch(ctx, start, ps.load)

	ps.mu.Lock()
	ps.finished = true
	for _, r := range ps.pending {
		r.timer.Stop()
	}
	dropped := ps.dropped
	ps.mu.Unlock()
	return ps.end("peerset", start, w, ps.load(), dropped)
}

// load reads the connected peers' channels, and how many of them carry a
// request (at most their channels: a peer that reconnected with fewer may
// still have more out).
func (ps *Peerset) load() hostLoad {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	l := hostLoad{peers: len(ps.conns)}
	for id, c := range ps.conns {
		l.channels += c.channels
		if pt := ps.tally.peers[id]; pt != nil {
			l.closed += min(pt.inFlight, c.channels)
		}
	}
	return l
}

func (ps *Peerset) addLocked(id peer.ID) {
	if !ps.inSet[id] {
		ps.inSet[id] = true
		ps.set = append(ps.set, id)
	}
}

// anyLiveLocked reports whether a peer of the set is connected.
func (ps *Peerset) anyLiveLocked() bool {
	for _, id := range ps.set {
		if _, up := ps.conns[id]; up {
			return true
		}
	}
	return false
}

// widenLocked adds to the set the connected peer with the lowest ID that is
// not in it yet. It reports whether it found one.
func (ps *Peerset) widenLocked() bool {
	for _, id := range ps.order {
		if _, up := ps.conns[id]; up && !ps.inSet[id] {
			ps.addLocked(id)
			return true
		}
	}
	return false
}

// pumpLocked sends batches to the peers of the set while they have room and
// work is waiting, skipping those benched or judged useless. A retry avoids
// the peer that failed it as long as another peer of the set has requests
// in flight (and so will come back for more).
func (ps *Peerset) pumpLocked() {
	if !ps.running || ps.finished {
		return
	}
	now := ps.cfg.Clock.Now()
	if ps.front.waitingCount() > 0 && !ps.anyLiveLocked() {
		ps.widenLocked()
	}
	for pass := 0; pass < 2; pass++ {
		anyPeer := pass == 1
		if anyPeer && ps.tally.inFlight > 0 {
			return
		}
		for _, id := range ps.set {
			c, up := ps.conns[id]
			if !up {
				continue // gone: skipped, as a dead weak pointer would be
			}
			if !ps.mayAskLocked(id, now) {
				continue // benched or useless (see Config.Penalty)
			}
			for ps.front.waitingCount() > 0 && ps.tally.peer(id).inFlight < c.channels {
				if !ps.sendLocked(c, id, anyPeer) {
					break
				}
			}
		}
	}
}

// sendLocked sends one batch to the peer id over c, arming its timer, and
// reports whether it did.
func (ps *Peerset) sendLocked(c *psConn, id peer.ID, anyPeer bool) bool {
	hashes := ps.front.takeSized(ps.cfg.Batch, id, anyPeer)
	if len(hashes) == 0 {
		return false
	}
	ps.lastID++
	rid := ps.lastID
	if err := c.p.Send(peer.RequestID(rid), ledger.GetObjects{Hashes: hashes}); err != nil {
		ps.sendFailedLocked(hashes, id)
		return false
	}
	r := &psRequest{to: id, hashes: hashes, sentAt: ps.cfg.Clock.Now()}
	r.timer = ps.cfg.Clock.AfterFunc(ps.cfg.Timeout, func() { ps.expire(rid) })
	ps.pending[rid] = r
	ps.tally.sent(id)
	ps.tally.hashes += len(hashes)
	ps.tally.batches++
	return true
}

// expire runs on a request's timer: the request failed, its hashes go back,
// and the set grows by one peer.
func (ps *Peerset) expire(id uint64) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	r, ok := ps.pending[id]
	if !ok || ps.finished {
		return
	}
	delete(ps.pending, id)
	ps.ended[id] = false
	ps.failedLocked(r.hashes, r.to, failTimeout)
	ps.widenLocked()
	ps.pumpLocked()
}

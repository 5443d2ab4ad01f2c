// Package peerpool holds the scheduler's accounting of every connected
// peer's channels: the Pool, which keeps the peers with an open channel
// ranked best first, and the ranking's parts (response-time classes, tie
// keys).
package peerpool

import (
	"math"
	"time"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// Ref names one connection in a Pool. A peer that disconnects and connects
// again gets a new Ref, so a Ref kept by an old request or notification never
// touches the new connection. The zero Ref names nothing.
type Ref struct {
	slot        int32
	incarnation uint32 // never 0 for a connected slot
}

// Slot is the index of the pool record that this Ref names, stable for the
// connection's lifetime and reused after it ends. It lets other tables index
// per-peer data by a small integer.
func (r Ref) Slot() int { return int(r.slot) }

// Choice is one open channel picked by Pool.Best.
type Choice struct {
	Ref    Ref
	ID     peer.ID
	Closed int           // the peer's closed channels when it was picked
	Limit  int           // the peer's current limit when it was picked
	RTT    time.Duration // the peer's smoothed response time; 0 before its first response
}

// Pool counts every connected peer's open and closed channels and keeps the
// peers that have an open channel ordered best first: fewer closed channels,
// then a faster class of smoothed response time (response times within a
// factor of two may count as equal; see CompareRTTs), then
// the peer not sent to for longer (those not sent to since they connected
// first, in the order of their tie keys; see TieKey), then the lower ID.
// The tie keys come from the pool's rank seed (SetRankSeed), so that pools
// with different seeds, seeing the same peers alike, do not all pick the
// same peer first, and equal peers take turns.
//
// Each peer has a limit: how many messages it may have in flight. A closed
// channel carries one message, so a peer has closed channels for its
// messages in flight and open channels for the rest of its limit:
// open = min(max(limit − closed, 0), allowance), its allowance being
// unlimited unless SetAllowance paces it, and its channel count is open +
// closed.
// A peer connected with a fixed count keeps that limit; one connected with a
// limit.Limiter has the limit its Limiter gives, which may move as requests
// end (see Observe). A lower limit never takes a closed channel away: the
// message on it runs to its end, and the channel then retires instead of
// reopening, until the peer is back within its limit.
//
// The zero Pool is empty and ready to use. A Pool is not safe for concurrent
// use; the scheduler guards it with its offers lock. Every method is O(log P)
// in the number of peers P except: Best, BestOf and FillListing, which are
// O(n log n) in the number of channels they list, whatever P is; Observe,
// which adds the cost of the peer's Limiter; Usage and SetRankSeed, which
// are O(P); and TakeOpened and ForgetOpened, O(the peers reported). Any
// method that changes the pool may first fill in an owed listing, at the
// cost of FillListing.
type Pool struct {
	records []record          // indexed by Ref.slot
	free    []int32           // slots of records not in use
	slotOf  map[peer.ID]int32 // connected peers
	order   []int32           // heap of slots with an open channel, best at [0]
	open    int               // open channels over all peers
	closed  int               // closed channels over all peers
	fresh   []pickCandidate   // scratch for Best: peers not yet picked, a heap
	again   []pickCandidate   // scratch for Best: peers picked before, in rank order
	seed    uint64            // the rank seed the tie keys and the RTT grid come from
	grid    uint64            // rttGrid(seed), or 0 until first needed
	closes  uint64            // Close calls that closed a channel, for the tie keys
	grew    []int32           // slots of peers whose open channels grew since TakeOpened
	ignore  bool              // IgnoreOpened: grew is not kept
	owed    owedListing       // BestDeferred's listing, while its channels after the first are owed
}

type record struct {
	peer        peer.Peer
	id          peer.ID
	limiter     limit.Limiter // nil for a fixed limit
	incarnation uint32        // 0 while the slot is free
	limit       int32         // the messages the peer may have in flight
	closed      int32         // the messages it has in flight
	// allowance is how many more messages the peer's rate lets it be sent
	// (see SetAllowance); unpaced for a peer without one.
	allowance  int32
	orderIndex int32 // position in Pool.order, or -1
	rtt        time.Duration
	grew       bool // in Pool.grew: its open channels grew since TakeOpened
	// rank is the peer's RTT class on the pool's grid and its tie key
	// (TieKey, or the sentKey of its last Close), packed (see rank).
	rank uint64
}

// unpaced is the allowance of a peer whose rate is not paced: more than
// any limit.
const unpaced = math.MaxInt32

// open is how many channels of the peer may carry a message now: what its
// limit leaves after its messages in flight, and no more than its rate's
// allowance.
func (r *record) open() int32 { return min(max(r.limit-r.closed, 0), r.allowance) }

// Connect adds p, whose ID is id, with a fixed limit of the given number of
// channels, all open. The caller passes id (p.ID()) so that it can ask the
// host for it before taking its locks. It fails, changing nothing, on a nil
// peer, fewer than one channel, more than MaxChannelsPerPeer, or an ID
// already connected.
func (pl *Pool) Connect(p peer.Peer, id peer.ID, channels int) (Ref, error) {
	if channels < 1 {
		return Ref{}, peer.ErrBadChannels
	}
	if channels > peer.MaxChannelsPerPeer {
		return Ref{}, peer.ErrTooManyChannels
	}
	return pl.connect(p, id, nil, channels)
}

// ConnectLimited adds p, whose ID is id, with its limit decided by l and
// starting at start, which the caller read from l.Limit() before taking its
// locks (see Limiter for why the pool asks l again only after Observe).
// start is clamped to [1, MaxChannelsPerPeer], as every limit l gives
// later is. It fails, changing nothing, on a nil peer or Limiter, or an ID
// already connected.
func (pl *Pool) ConnectLimited(p peer.Peer, id peer.ID, l limit.Limiter, start int) (Ref, error) {
	if l == nil {
		return Ref{}, peer.ErrNilLimiter
	}
	return pl.connect(p, id, l, int(clampLimit(start)))
}

func (pl *Pool) connect(p peer.Peer, id peer.ID, l limit.Limiter, channels int) (Ref, error) {
	if p == nil {
		return Ref{}, peer.ErrNilPeer
	}
	if _, dup := pl.slotOf[id]; dup {
		return Ref{}, peer.ErrAlreadyConnected
	}
	pl.settle()
	if pl.slotOf == nil {
		pl.slotOf = make(map[peer.ID]int32)
	}
	var slot int32
	if n := len(pl.free); n > 0 {
		slot = pl.free[n-1]
		pl.free = pl.free[:n-1]
	} else {
		slot = int32(len(pl.records))
		pl.records = append(pl.records, record{})
	}
	r := &pl.records[slot]
	next := r.incarnation + 1
	if next == 0 {
		next = 1 // incarnation 0 marks a free slot
	}
	*r = record{peer: p, id: id, limiter: l, incarnation: next, limit: int32(channels), allowance: unpaced, orderIndex: -1,
		rank: rank(0, TieKey(pl.seed, id))}
	pl.slotOf[id] = slot
	pl.open += channels
	pl.grow(slot, r)
	pl.pushOrder(slot)
	return Ref{slot: slot, incarnation: next}, nil
}

// Disconnect removes the peer named id; its channels, open or closed, stop
// existing. It returns the Ref the peer had, or ErrUnknownPeer.
func (pl *Pool) Disconnect(id peer.ID) (Ref, error) { return pl.DisconnectIf(id, nil) }

// DisconnectIf is Disconnect, but only if the peer connected under id is
// the value p (compared with ==; the caller makes sure it can be), unless p
// is nil. It returns ErrNotThatPeer, changing nothing, if another value is
// connected under id.
func (pl *Pool) DisconnectIf(id peer.ID, p peer.Peer) (Ref, error) {
	slot, ok := pl.slotOf[id]
	if !ok {
		return Ref{}, peer.ErrUnknownPeer
	}
	r := &pl.records[slot]
	if p != nil && r.peer != p {
		return Ref{}, peer.ErrNotThatPeer
	}
	pl.settle()
	ref := Ref{slot: slot, incarnation: r.incarnation}
	if r.orderIndex >= 0 {
		pl.removeOrder(r.orderIndex)
	}
	pl.open -= int(r.open())
	pl.closed -= int(r.closed)
	delete(pl.slotOf, id)
	// Keep the incarnation so the next peer in this slot gets a new one.
	*r = record{incarnation: r.incarnation, orderIndex: -1}
	pl.free = append(pl.free, slot)
	return ref, nil
}

// Target returns the peer ref names, to send it a message, and how many
// open channels it has: p is nil if it is gone, and open 0 if it is at its
// limit or its allowance is spent.
func (pl *Pool) Target(ref Ref) (p peer.Peer, open int) {
	r := pl.live(ref)
	if r == nil {
		return nil, 0
	}
	return r.peer, int(r.open())
}

// Close closes one open channel of the peer ref names and returns how many
// messages the peer then has in flight, this one included. Among peers
// equal to it, the peer now goes last. It returns 0, changing nothing, if
// the peer is gone or has no open channel (its limit may have fallen since
// the channel was offered).
func (pl *Pool) Close(ref Ref) (inFlight int) {
	r := pl.live(ref)
	if r == nil || r.open() == 0 {
		return 0
	}
	if pl.owed.list != nil {
		pl.recordClose(ref.slot, r)
	}
	r.closed++
	if r.allowance != unpaced {
		r.allowance-- // both terms of open fall by one: so does open
	}
	// More load ranks it later whatever its key: it can only move down.
	r.rank = rank(rankClass(r.rank), sentKey(pl.closes))
	pl.closes++
	pl.closedOne(r)
	pl.closeDone(r)
	return int(r.closed)
}

// closedOne counts one channel of the peer whose record is r closed, which
// Close (or redoClose) has just recorded in r, and moves the peer in the
// order: out of it if it has no open channel left, else later, since more
// load can only rank it later.
func (pl *Pool) closedOne(r *record) {
	pl.open--
	pl.closed++
	if r.open() == 0 {
		pl.removeOrder(r.orderIndex)
	} else {
		pl.down(int(r.orderIndex))
	}
}

// Reopen ends the message on one closed channel of the peer ref names, and
// reports whether that channel opened: it does if the peer is within its
// limit and its allowance, and otherwise retires (the peer's limit fell
// while the message was in flight) or waits for the allowance. It returns
// false, changing nothing, if the peer is gone (its channels went with it)
// or has no closed channel. It also undoes a Close whose message was never
// sent, TakeOpened's report included: a sender passed over while the
// channel was claimed may want it. It gives back neither the allowance
// that Close took (the caller sets it again) nor the peer's place among
// equals.
func (pl *Pool) Reopen(ref Ref) bool {
	r := pl.live(ref)
	if r == nil || r.closed == 0 {
		return false
	}
	return pl.release(ref.slot, r)
}

// release takes one message off the peer in slot, whose record is r, and
// reports whether its channel opened.
func (pl *Pool) release(slot int32, r *record) bool {
	pl.settle()
	before := r.open()
	r.closed--
	pl.closed--
	if r.open() == before {
		// Retired (the peer is still at or above its limit), or kept shut
		// by its rate's allowance; with fewer closed it ranks better.
		if r.orderIndex >= 0 {
			pl.up(int(r.orderIndex))
		}
		return false
	}
	pl.open++
	pl.grow(slot, r)
	if before == 0 {
		pl.pushOrder(slot)
	} else {
		pl.up(int(r.orderIndex))
	}
	return true
}

// SetAllowance paces the peer ref names: from now on it has at most n open
// channels (n is clamped to [0, MaxChannelsPerPeer]), fewer as its limit
// and its messages in flight leave, and each Close takes one from n, until
// the next SetAllowance. The scheduler sets it to how many messages the
// peer's rate pays for (limit.Pacer.Allows) after every send to it and
// when its rate pays for one again. It reports whether the peer's open
// channels grew (TakeOpened then reports it), and does nothing if the peer
// is gone.
func (pl *Pool) SetAllowance(ref Ref, n int) bool {
	r := pl.live(ref)
	if r == nil {
		return false
	}
	pl.settle()
	before := r.open()
	r.allowance = int32(min(max(n, 0), peer.MaxChannelsPerPeer))
	return pl.reshape(ref.slot, r, before)
}

// Allowance returns how many more messages the rate of the peer ref names
// lets it be sent (see SetAllowance), and whether it is paced at all; 0 and
// false if it is gone.
func (pl *Pool) Allowance(ref Ref) (n int, paced bool) {
	r := pl.live(ref)
	if r == nil || r.allowance == unpaced {
		return 0, false
	}
	return int(r.allowance), true
}

// rttWeight is the share of a new sample in the smoothed response time, as a
// shift: 1/8, the weight TCP gives its smoothed round-trip time, so one slow
// answer moves the average but does not dominate it.
const rttWeight = 3

// ObserveRTT folds one response time into the smoothed response time of the
// peer ref names; it does nothing if the peer is gone.
func (pl *Pool) ObserveRTT(ref Ref, sample time.Duration) {
	if r := pl.live(ref); r != nil {
		pl.observeRTT(r, sample)
	}
}

// observeRTT is ObserveRTT for the connected peer whose record is r.
func (pl *Pool) observeRTT(r *record, sample time.Duration) {
	pl.settle() // Best lists every channel's response time
	if r.rtt == 0 {
		r.rtt = sample
	} else {
		r.rtt += (sample - r.rtt) >> rttWeight
		if r.rtt <= 0 {
			r.rtt = 1 // 0 means "no sample yet"
		}
	}
	// Only the class ranks: most samples leave it, and the order, as
	// they were.
	if class := rttClass(r.rtt, pl.rttGrid()); class != rankClass(r.rank) {
		r.rank = rank(class, rankKey(r.rank))
		if r.orderIndex >= 0 {
			pl.fix(int(r.orderIndex))
		}
	}
}

// SetRankSeed sets the seed of the tie keys (see TieKey) and of the
// response-time grid (see CompareRTTs), gives every connected peer the key
// it had when it connected, under this seed, as if it had not been sent to
// since, and places its response time on the new grid. The zero Pool's
// seed is 0. A scheduler sets it once, before any peer connects; later it
// costs O(P log P) for P peers.
func (pl *Pool) SetRankSeed(seed uint64) {
	pl.settle()
	pl.seed, pl.grid = seed, rttGrid(seed)
	for _, slot := range pl.slotOf {
		r := &pl.records[slot]
		r.rank = rank(rttClass(r.rtt, pl.grid), TieKey(seed, r.id))
	}
	for i := len(pl.order)/2 - 1; i >= 0; i-- {
		pl.down(i)
	}
}

// RankSeed returns the seed of the tie keys and the response-time grid.
func (pl *Pool) RankSeed() uint64 { return pl.seed }

// rttGrid returns the pool's grid factor, computing it the first time (the
// zero Pool has not).
func (pl *Pool) rttGrid() uint64 {
	if pl.grid == 0 {
		pl.grid = rttGrid(pl.seed)
	}
	return pl.grid
}

// grow records that the open channels of the peer in slot, whose record is
// r, grew.
func (pl *Pool) grow(slot int32, r *record) {
	if !r.grew && !pl.ignore {
		r.grew = true
		pl.grew = append(pl.grew, slot)
	}
}

// TakeOpened appends to dst the IDs of the connected peers whose open
// channels grew (they connected, a message ended and its channel opened,
// their limit rose) since the last TakeOpened or ForgetOpened, each once,
// and forgets them. It lets a waiting sender that wants channels of a peer
// be told when there may be some.
func (pl *Pool) TakeOpened(dst []peer.ID) []peer.ID {
	for _, slot := range pl.grew {
		if r := &pl.records[slot]; r.grew {
			r.grew = false
			dst = append(dst, r.id)
		}
	}
	pl.grew = pl.grew[:0]
	return dst
}

// IgnoreOpened stops (on) or starts again (off) the record TakeOpened
// reports, forgetting it when it stops: while no one will ask, keeping it
// would cost every channel that opens. The zero Pool keeps it.
func (pl *Pool) IgnoreOpened(on bool) {
	if on && !pl.ignore {
		pl.ForgetOpened()
	}
	pl.ignore = on
}

// ForgetOpened forgets the peers TakeOpened would return.
func (pl *Pool) ForgetOpened() {
	for _, slot := range pl.grew {
		pl.records[slot].grew = false
	}
	pl.grew = pl.grew[:0]
}

// OpenOf returns how many open channels the peer named id has: 0 if it is
// not connected.
func (pl *Pool) OpenOf(id peer.ID) int {
	slot, ok := pl.slotOf[id]
	if !ok {
		return 0
	}
	return int(pl.records[slot].open())
}

// Open returns the number of open channels over all peers.
func (pl *Pool) Open() int { return pl.open }

// ClosedChannels returns the number of closed channels over all peers.
func (pl *Pool) ClosedChannels() int { return pl.closed }

// Len returns the number of connected peers.
func (pl *Pool) Len() int { return len(pl.slotOf) }

// Usage appends one entry per connected peer to dst, in no fixed order.
func (pl *Pool) Usage(dst []peer.Usage) []peer.Usage {
	for _, slot := range pl.slotOf {
		r := &pl.records[slot]
		dst = append(dst, peer.Usage{ID: r.id, Channels: int(r.open() + r.closed), ChannelsOpen: int(r.open()), ChannelsClosed: int(r.closed),
			Limit: int(r.limit), RTT: r.rtt})
	}
	return dst
}

func (pl *Pool) live(ref Ref) *record {
	if ref.incarnation == 0 || ref.slot < 0 || int(ref.slot) >= len(pl.records) {
		return nil
	}
	r := &pl.records[ref.slot]
	if r.incarnation != ref.incarnation || r.peer == nil {
		return nil
	}
	return r
}

package hedge

import (
	"reflect"
	"slices"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// call is one request sent through Request: its first request, perhaps its
// hedge, and the receiver that gets the one outcome of both.
//
// The scheduler calls the two legs' receivers, and the hedge's sender,
// one at a time; only Withdraw and Request, from other goroutines, can run
// beside them. Every step decides under the Hedger's mutex what follows
// (done is the claim on r's one call), then releases it to act.
type call struct {
	h       *Hedger
	id      CallID // the call's name, the ID r sees
	r       receiver.Receiver
	message any
	hard    time.Duration // the hedge's deadline, as the first request's
	expect  reflect.Type  // the hedge's expected response type, as the first request's
	origin  peer.ID       // the first request's peer, which the hedge avoids

	first, second leg // the first request, and the hedge

	// The following fields are guarded by h.mu.
	done   bool    // r's call is claimed, or the call was withdrawn
	slow   bool    // the first request passed its soft deadline
	sender *sender // the hedge's sender, once the budget allowed it
	// lastFrom and lastReason are the last failure of a leg, which r
	// gets if the other leg fails too.
	lastFrom   peer.ID
	lastReason receiver.Reason
}

// leg is one of a call's two requests, and its receiver.
type leg struct {
	c *call
	// The following fields are guarded by c.h.mu.
	id   peer.RequestID
	live bool // sent (or being sent) and not ended
}

// cleanup is what ending a call leaves to do once the lock is released:
// withdraw its live requests' receivers, and its hedge's sender if it
// waits in the queue.
type cleanup struct {
	legs   [2]peer.RequestID
	ticket offer.Ticket
	sender *sender
}

// endLocked claims the call's end (r's one call, or its withdrawal) and
// returns what must be withdrawn. Caller holds h.mu.
func (c *call) endLocked() cleanup {
	var w cleanup
	c.done = true
	if c.h.calls[c.id] == c {
		delete(c.h.calls, c.id)
	}
	for i, l := range [2]*leg{&c.first, &c.second} {
		if l.live && l.id != 0 {
			w.legs[i] = l.id
		}
		l.live = false
	}
	if s := c.sender; s != nil && s.state == waiting {
		s.setLocked(gone)
		// A ticket of 0: hedge has not had it back from ScheduleWith, and
		// will withdraw the sender itself when it has.
		w.ticket, w.sender = s.ticket, s
	}
	return w
}

// run withdraws what w names, and refunds the token of a hedge that leaves
// the queue unsent. Called without h.mu.
func (w cleanup) run(h *Hedger) {
	for _, id := range w.legs {
		if id != 0 {
			h.sched.WithdrawReceiver(id)
		}
	}
	if w.ticket != 0 && h.sched.WithdrawSender(w.ticket) {
		h.mu.Lock()
		w.sender.refundLocked()
		h.mu.Unlock()
	}
}

// pendingLocked reports whether a leg of the call may still answer.
func (c *call) pendingLocked() bool { return c.first.live || c.second.live }

// hedge schedules the call's hedge if the call is live and slow, has no
// hedge yet, and the budget allows, and reports whether it did.
func (c *call) hedge() bool {
	h := c.h
	h.mu.Lock()
	if c.done || !c.slow || c.sender != nil {
		h.mu.Unlock()
		return false
	}
	if !h.budget.Spend() {
		h.stats.Denied++
		h.mu.Unlock()
		return false
	}
	s := &sender{c: c, token: true}
	s.setLocked(waiting)
	c.sender = s
	h.mu.Unlock()

	// The scheduler offers the hedge only channels of other peers: it waits,
	// keeping its place, while the first request's peer alone has open
	// channels, and is never asked to turn an offer down.
	opts := h.opts.Sender
	opts.Avoid = append(slices.Clip(opts.Avoid), c.origin)
	t, err := h.sched.ScheduleWith(s, h.opts.Priority, opts)

	h.mu.Lock()
	if err != nil {
		// Never queued, never sent; a later Hedge may try again.
		h.stats.Unqueued++
		s.setLocked(gone)
		s.refundLocked()
		if c.sender == s {
			c.sender = nil
		}
		h.mu.Unlock()
		return false
	}
	s.ticket = t
	leave := s.state == gone // the call ended while ScheduleWith ran
	h.mu.Unlock()
	if leave && h.sched.WithdrawSender(t) {
		h.mu.Lock()
		s.refundLocked()
		h.mu.Unlock()
	}
	return true
}

// OnSlow is the first request's soft deadline: the call is slow, and is
// hedged unless its receiver, a Receiver, wants it left. Implements
// receiver.SlowReceiver.
func (l *leg) OnSlow(_ peer.RequestID, from peer.ID) {
	c := l.c
	h := c.h
	h.mu.Lock()
	if c.done || c.slow || l != &c.first {
		h.mu.Unlock()
		return
	}
	c.slow = true
	h.stats.Slow++
	h.mu.Unlock()
	if r, ok := c.r.(Receiver); ok && !r.WantHedge(c.id, from) {
		return
	}
	c.hedge()
}

// OnResponse ends the call with the leg's answer, the first to come: r
// gets it, and the other leg is withdrawn. Implements receiver.Receiver.
func (l *leg) OnResponse(_ peer.RequestID, from peer.ID, response any) {
	c := l.c
	c.h.mu.Lock()
	if !l.arriveLocked() {
		c.h.mu.Unlock()
		return
	}
	if l == &c.second {
		c.h.stats.HedgeWins++
	}
	c.r.OnResponse(c.endAndUnlock(), from, response)
}

// OnFailure ends the call with the leg's failure unless the other leg may
// still answer: then the call waits for it. Implements receiver.Receiver.
func (l *leg) OnFailure(_ peer.RequestID, from peer.ID, reason receiver.Reason) {
	c := l.c
	c.h.mu.Lock()
	if !l.arriveLocked() {
		c.h.mu.Unlock()
		return
	}
	c.lastFrom, c.lastReason = from, reason
	if c.pendingLocked() {
		c.h.mu.Unlock()
		return
	}
	c.r.OnFailure(c.endAndUnlock(), from, reason)
}

// arriveLocked records that the leg's request ended, and reports whether
// the call still waits for its outcome (r's one call is not claimed yet).
// Caller holds h.mu.
func (l *leg) arriveLocked() bool {
	l.live = false
	return !l.c.done
}

// endAndUnlock claims r's one call, releases h.mu, withdraws what the call
// leaves live, and returns the ID r is to see: the call's. Caller holds
// h.mu.
func (c *call) endAndUnlock() peer.RequestID {
	w := c.endLocked()
	c.h.mu.Unlock()
	w.run(c.h)
	return peer.RequestID(c.id)
}

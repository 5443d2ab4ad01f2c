package hedge

import (
	"errors"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
)

// sender is a call's hedge waiting in the scheduler's queue: a one-shot
// sender that puts the call's message on the best offered channel. It is
// scheduled avoiding the first request's peer (offer.Options.Avoid), so
// every channel it is offered leads to another peer. If the host refuses
// every send it tries, it sent nothing and the scheduler parks it; it does
// not ask again (the same channels would likely fail again, over and over
// on the callback lane), and it waits, parked, until its call ends and
// withdraws it, refunding its token.
type sender struct {
	c *call
	// The following fields are guarded by c.h.mu.
	state  senderState
	ticket offer.Ticket // 0 until ScheduleWith has returned it
	token  bool         // holds a token of the budget: not sent, not refunded
}

type senderState uint8

const (
	waiting senderState = iota + 1 // in the queue
	sending                        // in OnOffer, sending
	sent                           // the hedge went: the call's second leg
	gone                           // withdrawn, discarded, or never queued
)

// setLocked moves s to state to, keeping the Hedger's count of hedges
// waiting. Caller holds h.mu.
func (s *sender) setLocked(to senderState) {
	h := s.c.h
	if s.state == waiting {
		h.waiting--
	}
	if to == waiting {
		h.waiting++
	}
	s.state = to
}

// refundLocked gives the budget back the token of a hedge that will never
// be sent, once. Caller holds h.mu.
func (s *sender) refundLocked() {
	if s.token {
		s.token = false
		s.c.h.budget.Refund()
	}
}

// OnOffer sends the hedge, unless the call has ended. Implements
// offer.Sender.
func (s *sender) OnOffer(o offer.Offer) {
	c := s.c
	h := c.h
	h.mu.Lock()
	if s.state != waiting || c.done {
		h.mu.Unlock()
		return
	}
	s.setLocked(sending)
	c.second.live = true // a failure of the first leg now waits for this one
	h.mu.Unlock()

	id, to, err := sendFirst(o, offer.Request{Message: c.message, Receiver: &c.second, Timeout: c.hard, Expect: c.expect})

	h.mu.Lock()
	if err == nil {
		s.setLocked(sent)
		s.token = false
		c.second.id = id
		h.stats.Hedges++
		if c.done {
			// Withdrawn meanwhile, from another goroutine: so is the hedge.
			c.second.live = false
			h.mu.Unlock()
			h.sched.WithdrawReceiver(id)
			return
		}
		h.mu.Unlock()
		if r, ok := c.r.(Receiver); ok {
			r.OnHedge(c.id, to)
		}
		return
	}
	// Nothing sent: back to waiting, in the queue still (parked).
	c.second.live = false
	s.setLocked(waiting)
	switch {
	case c.done: // withdrawn meanwhile: leave the queue
		s.setLocked(gone)
		w := cleanup{ticket: s.ticket, sender: s}
		h.mu.Unlock()
		w.run(h)
	case !c.first.live: // the first leg failed meanwhile, and no hedge went
		from, reason := c.lastFrom, c.lastReason
		c.r.OnFailure(c.endAndUnlock(), from, reason)
	default:
		h.mu.Unlock()
	}
}

// OnDiscard: the scheduler stopped while the hedge waited. Its token goes
// back; the call ends with its first leg, which the stop fails.
// Implements offer.Sender.
func (s *sender) OnDiscard() {
	h := s.c.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.state != sent {
		s.setLocked(gone)
	}
	s.refundLocked()
}

// errNoChannel: the offer lists no channel (it expired).
var errNoChannel = errors.New("hedge: no channel in the offer")

// sendFirst sends req on the first channel of o, going on to the next if
// a send fails, and returns the request's ID and peer.
func sendFirst(o offer.Offer, req offer.Request) (peer.RequestID, peer.ID, error) {
	err := errNoChannel
	for i, ch := range o.All() {
		var id peer.RequestID
		if id, err = o.Send(i, req); err == nil {
			return id, ch.Peer, nil
		}
		if errors.Is(err, offer.ErrExpired) || errors.Is(err, offer.ErrSizeExceeded) {
			break
		}
	}
	return 0, "", err
}

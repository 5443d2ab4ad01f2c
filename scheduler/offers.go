package scheduler

import (
	"fmt"
	"math"
	"time"

	"github.com/peersched/peersched/internal/offerlink"
	"github.com/peersched/peersched/internal/offerqueue"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// makeOffers makes offers, one at a time, while a sender and an open channel
// can meet and no receiver callback is waiting; it reports whether it stopped
// for the callbacks with offers still possible. Only the drainer calls it, so
// offers are made one at a time and the channels listed in an open offer can
// only be closed through that offer, or vanish with their peer, or close
// because their peer's limit fell (a send on one then fails with
// offer.ErrPeerAtLimit). Closing one
// offer and opening the next share one acquisition of offersMu: that is one
// lock round trip fewer on every request's path.
func (s *Scheduler) makeOffers() (more bool) {
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	s.offersDue = false // this is the pass; a sender queued from here on asks again
	for {
		if s.owed.Load() > 0 {
			return true
		}
		snd, generation, ok := s.openOfferLocked()
		if !ok {
			return false
		}
		s.offerLocked(snd, generation)
	}
}

// offerLocked hands snd the offer named generation, releasing offersMu while
// OnOffer runs, and closes the offer once it returns, however it returns.
// Caller holds offersMu, which it holds again on return, even if OnOffer ends
// its goroutine with runtime.Goexit.
func (s *Scheduler) offerLocked(snd offer.Sender, generation uint64) {
	s.offersMu.Unlock()
	defer func() {
		s.offersMu.Lock()
		var d offerqueue.Decision
		s.book.CloseInto(generation, &d)
		s.decideLocked(&d)
	}()
	s.callSender(snd, generation)
}

// openOfferLocked opens an offer to the next sender, if a sender and an open
// channel can meet, and returns the sender and the offer's generation.
// Caller holds offersMu.
func (s *Scheduler) openOfferLocked() (snd offer.Sender, generation uint64, ok bool) {
	if s.stopped || s.pool.Open() == 0 {
		return nil, 0, false
	}
	s.wakeSetAsideLocked()
	if s.pass != nil {
		s.pass.Reset() // every offer is a new pass over the queue
	}
	var c offerqueue.Chosen
	ok = s.queue.Pick(s.pass, &s.pool, &c)
	s.trackOpenedLocked() // Pick may have set senders aside
	if !ok {
		return nil, 0, false
	}
	room := math.MaxInt
	s.offerCost = c.Cost
	s.offerBytes = 0
	if s.byteBucket != nil {
		s.offerBytes = c.Bytes
	}
	if s.budgeted {
		if room = s.budgetRoomLocked(s.offerBytes); room == 0 {
			return nil, 0, false
		}
	}
	s.offerClass = 0
	if s.classes != nil {
		if c.Classed {
			s.offerClass = int32(c.Class) + 1
			room = min(room, s.classRoomLocked(s.offerClass))
		}
	}
	// Fairness: while others wait, a sender may close one channel per offer;
	// alone, it may close every channel it is shown (at most maxOffer, the
	// best), as far as the budget allows.
	size := 1
	if s.queue.Len() == 1 {
		size = min(s.pool.Open(), room)
	}
	// The channels are listed into the book's own list: no copy. Without
	// wants, only the first is ranked now: the book has the pool fill in
	// the rest, as they are now, if the sender reads past the first (see
	// peerpool.Pool.BestDeferred).
	var choices []peerpool.Choice
	if len(c.Only) == 0 && len(c.Avoid) == 0 {
		choices = s.pool.BestDeferred(s.book.Listing(), s.maxOffer)
	} else {
		choices = s.pool.BestOf(s.book.Listing(), s.maxOffer, c.Only, c.Avoid)
	}
	s.queue.OfferedChosen(&c)
	return c.Sender, s.book.OpenListed(c.Ticket, c.Sender, choices, size), true
}

// wakeSetAsideLocked tells the queue which peers' channels opened since it
// was last told, so that the senders it set aside for want of them are
// offered channels again; while none is set aside, it only forgets them.
// Caller holds offersMu.
func (s *Scheduler) wakeSetAsideLocked() {
	if !s.queue.SetAside() {
		s.pool.IgnoreOpened(true)
		return
	}
	s.opened = s.pool.TakeOpened(s.opened[:0])
	for i, id := range s.opened {
		s.queue.Opened(id)
		s.opened[i] = ""
	}
}

// trackOpenedLocked has the pool record the peers whose channels open
// (Pool.TakeOpened) while some sender is set aside to wait for them, and
// only then: with no sender waiting so, which is the case when no sender
// has wants, a channel opening costs nothing for them. The record starts
// when the first sender is set aside, and openings before that changed
// nothing for it: it was set aside for the channels open then. Caller
// holds offersMu.
func (s *Scheduler) trackOpenedLocked() { s.pool.IgnoreOpened(!s.queue.SetAside()) }

// decideLocked carries out what the book decided about an offered sender.
// Caller holds offersMu.
func (s *Scheduler) decideLocked(d *offerqueue.Decision) {
	switch d.Exit {
	case offerqueue.LeftBySend:
		s.queue.Remove(d.Ticket)
	case offerqueue.Held:
		s.queue.Hold(d.Ticket)
	case offerqueue.Declined:
		if d.Discard {
			s.callbacksMu.Lock()
			s.pending.push(callback{kind: callDiscard, sender: d.Sender})
			s.callbacksMu.Unlock()
			return
		}
		s.queue.Decline(d.Ticket)
		s.trackOpenedLocked() // a sender waiting for an opening is set aside
	}
}

// newOffer returns the offer named generation, carried out by c: package
// offer's constructor, which it does not export (see package offerlink),
// asserted once to its type so that each offer costs a call and no
// allocation.
var newOffer = offerlink.NewOffer.(func(c offerlink.Carrier, generation uint64) offer.Offer)

// carrier is the Scheduler seen as an offerlink.Carrier: a distinct method
// set, so the methods offers call do not clutter the Scheduler's own API.
type carrier Scheduler

func (c *carrier) OfferStatus(generation uint64) offerlink.Status {
	s := (*Scheduler)(c)
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	return s.book.Status(generation)
}

func (c *carrier) OfferChannel(generation uint64, i int) (peerpool.Choice, bool) {
	s := (*Scheduler)(c)
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	return s.book.Channel(generation, i)
}

func (c *carrier) OfferChannels(generation uint64, dst []peerpool.Choice) []peerpool.Choice {
	s := (*Scheduler)(c)
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	return s.book.Channels(generation, dst)
}

// claim records a send on the i-th channel of the open offer, copies the
// channel into *ch and returns the peer to send to. It leaves the offers
// lock held on success; the caller must then call finishSend once the
// host's send has returned (or failed to). The channel is copied once,
// from the book's listing into the caller's variable: returned by value
// through two calls, it cost a copy at each.
func (s *Scheduler) claim(generation uint64, i int, ch *peerpool.Choice) (peer.Peer, error) {
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return nil, ErrStopped
	}
	if i > 0 {
		s.book.FillListing() // the channel may be owed (see Book.Claim)
	}
	listed, err := s.book.Claim(generation, i)
	if err != nil {
		s.offersMu.Unlock()
		return nil, err
	}
	p, open := s.pool.Target(listed.Ref)
	if p == nil || open == 0 {
		// Gone, or the peer's limit fell after the offer was made, and
		// took the channel with it.
		why, id := offer.ErrPeerGone, listed.ID
		if p != nil {
			why = offer.ErrPeerAtLimit
		}
		s.book.Finish(generation, i, false)
		s.offersMu.Unlock()
		return nil, fmt.Errorf("%w: %q", why, id)
	}
	*ch = *listed
	return p, nil
}

// finishSendLocked records how a claimed send ended, for its sender's exit.
// Caller holds offersMu.
func (s *Scheduler) finishSendLocked(generation uint64, i int, ok bool) {
	var d offerqueue.Decision
	s.book.FinishInto(generation, i, ok, &d)
	s.decideLocked(&d)
}

// sendEndedLocked marks the end of a claimed send's bookkeeping: everything
// it causes is queued by now. Before Stop it does nothing. After Stop it
// may be the last thing Shutdown is waiting for: Stop counted the sends in
// progress (sendsAfterStop), and each counts itself out here. No send is
// claimed after Stop, so the count only falls. Counting only after Stop,
// under the locks each send's end holds anyway, spares every send two
// atomic operations. Caller holds offersMu.
func (s *Scheduler) sendEndedLocked() {
	if !s.stopped {
		return
	}
	s.callbacksMu.Lock()
	s.sendsAfterStop--
	s.settleLocked()
	s.callbacksMu.Unlock()
}

func (c *carrier) OfferRequest(generation uint64, i int, req offerlink.Request) (peer.RequestID, error) {
	s := (*Scheduler)(c)
	r, soft, timeout := req.Receiver, req.Soft, req.Timeout
	if r == nil {
		return 0, receiver.ErrNilReceiver
	}
	if timeout <= 0 {
		return 0, fmt.Errorf("%w: %v", receiver.ErrBadTimeout, timeout)
	}
	var ch peerpool.Choice
	p, err := s.claim(generation, i, &ch)
	if err != nil {
		return 0, err
	}
	ref := ch.Ref
	s.requestsMu.Lock()
	// Receivers still owed a call count too: they bound the callback queue.
	if s.table.Len()+int(s.owed.Load()) >= s.maxRequests {
		s.requestsMu.Unlock()
		s.finishSendLocked(generation, i, false)
		s.sendEndedLocked()
		s.offersMu.Unlock()
		return 0, receiver.ErrTooManyRequests
	}
	s.pool.Close(ref)
	var cost int64
	if s.paced {
		cost, _ = s.chargeLocked(ref) // a hold is armed below
	}
	bytes := s.spendLocked()
	class := s.bookLocked()
	now := s.now()
	var id peer.RequestID
	if soft > 0 {
		id = s.table.AddSoft(r, ref, now, soft, timeout, requests.Terms{Class: class}, req.Expect)
	} else {
		id = s.table.Add(r, ref, now, timeout, requests.Terms{Class: class}, req.Expect)
	}
	s.armTimerLocked(now)
	s.requestsMu.Unlock()
	s.offersMu.Unlock()

	// The host's send is user code: if it ends its goroutine with
	// runtime.Goexit, the deferred undo still runs, as for a failed send.
	returned := false
	defer func() {
		if !returned {
			s.goexitInSend.Store(generation)
			s.userCodeDidNotReturn("peer send", nil)
			s.undoRequest(generation, i, id, cost, bytes, ch)
		}
	}()
	err = s.hostSend(p, id, req.Message)
	returned = true
	if err != nil {
		s.undoRequest(generation, i, id, cost, bytes, ch)
		err = s.sendFailed(ch.ID, err)
		s.wantOffers()
		return 0, err
	}

	s.offersMu.Lock()
	s.finishSendLocked(generation, i, true)
	s.counts.sent++
	s.peers.of(ref, ch.ID).sent++
	s.requestsMu.Lock()
	reopened := false
	f, ended := s.table.Sent(id)
	if ended {
		// Something ended the request while the host was sending it. If
		// that was its peer's disconnect, the table has forgotten the
		// peer's ID; the receiver is still owed the name of the peer the
		// request went to. The channel reopens now, not when the event
		// came: until the send returned, the request held it. (A
		// disconnected peer's channel is gone and stays gone.)
		f.PeerID = ch.ID
		s.releaseLocked(f.Terms)
		// An answer that came while the send ran is taken now: its
		// response time ends here.
		s.countEndLocked(&f, s.now())
		s.callbacksMu.Lock()
		s.oweLocked(&f)
		s.callbacksMu.Unlock()
		reopened = s.endLocked(f.Peer)
	}
	slowQueued := false
	if !ended && soft > 0 {
		// Its soft deadline may have passed while the host sent it.
		if slow, ok := s.table.SlowHeld(id); ok {
			s.callbacksMu.Lock()
			s.pending.pushSlow(slow)
			s.callbacksMu.Unlock()
			slowQueued = true
		}
	}
	s.requestsMu.Unlock()
	s.sendEndedLocked()
	s.offersMu.Unlock()
	switch {
	case reopened:
		s.wantOffers()
	case ended || slowQueued:
		s.run() // the receiver's call
	}
	return id, nil
}

// undoRequest takes back a request on ch whose host send failed: it never
// existed, its channel is open again, its peer's pacer has its cost back,
// and the budget has its token and bytes back. The send's bookkeeping ends
// with it.
func (s *Scheduler) undoRequest(generation uint64, i int, id peer.RequestID, cost, bytes int64, ch peerpool.Choice) {
	s.offersMu.Lock()
	s.requestsMu.Lock()
	if f, ok := s.table.Unsend(id); ok {
		s.pool.Reopen(f.Peer)
		s.releaseLocked(f.Terms)
	}
	if s.paced {
		s.unchargeLocked(ch.Ref, cost)
	}
	s.refundLocked(bytes)
	s.finishSendLocked(generation, i, false)
	s.countSendErrorLocked(ch)
	s.requestsMu.Unlock()
	s.sendEndedLocked()
	s.offersMu.Unlock()
}

func (c *carrier) OfferNotify(generation uint64, i int, message any, digest time.Duration) error {
	s := (*Scheduler)(c)
	if digest <= 0 {
		return fmt.Errorf("%w: %v", receiver.ErrBadTimeout, digest)
	}
	var ch peerpool.Choice
	p, err := s.claim(generation, i, &ch)
	if err != nil {
		return err
	}
	ref := ch.Ref
	s.pool.Close(ref)
	var cost int64
	if s.paced {
		var held bool
		if cost, held = s.chargeLocked(ref); held {
			// The timer must fire when the peer's rate pays again, even
			// if the host's send takes until then.
			s.armTimerNowLocked()
		}
	}
	bytes := s.spendLocked()
	terms := requests.Terms{Class: s.bookLocked()}
	s.offersMu.Unlock()

	undo := func() {
		s.offersMu.Lock()
		s.pool.Reopen(ref)
		if s.paced {
			s.unchargeLocked(ref, cost)
		}
		s.refundLocked(bytes)
		s.releaseLocked(terms)
		s.finishSendLocked(generation, i, false)
		s.countSendErrorLocked(ch)
		s.sendEndedLocked()
		s.offersMu.Unlock()
	}
	returned := false
	defer func() {
		if !returned {
			s.goexitInSend.Store(generation)
			s.userCodeDidNotReturn("peer send", nil)
			undo()
		}
	}()
	err = s.hostSend(p, 0, message)
	returned = true
	if err != nil {
		undo()
		err = s.sendFailed(ch.ID, err)
		s.wantOffers()
		return err
	}

	// The channel stays closed until the peer has had time to digest the
	// notification; only then is its deadline armed, so a failed send
	// never leaves one behind.
	s.offersMu.Lock()
	s.finishSendLocked(generation, i, true)
	s.counts.notified++
	s.peers.of(ref, ch.ID).notified++
	s.requestsMu.Lock()
	stopped := s.stopped
	recorded := false
	if !stopped {
		now := s.now()
		recorded = s.table.Notify(ref, now, digest, terms)
		s.armTimerLocked(now)
	}
	if !recorded {
		s.releaseLocked(terms) // stopped, or its peer left: it has ended
	}
	s.requestsMu.Unlock()
	reopened := stopped && s.endLocked(ref)
	s.sendEndedLocked()
	s.offersMu.Unlock()
	if reopened {
		s.wantOffers()
	}
	return nil
}

// countSendErrorLocked counts a send on ch that the host refused. Caller
// holds offersMu.
func (s *Scheduler) countSendErrorLocked(ch peerpool.Choice) {
	s.counts.sendErrors++
	s.peers.of(ch.Ref, ch.ID).sendErrors++
}

// sendFailed reports, as a warning, a send the host refused (or panicked
// on), and returns the error the sender gets: the host's error, named
// after the peer, under this package's prefix, once even if the host's
// error has it already (a panic's does).
func (s *Scheduler) sendFailed(to peer.ID, err error) error {
	err = fmt.Errorf("peersched: send to %q: %w", to, withoutPrefix(err))
	s.log.Warn("peersched: host send failed", "peer", string(to), "error", err.Error())
	return err
}

// hostSend calls the host's send, turning a panic into an error so that a
// misbehaving host cannot leave a channel closed forever.
func (s *Scheduler) hostSend(p peer.Peer, requestID peer.RequestID, message any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.logPanic("peer send", r)
			err = fmt.Errorf("%w: %v", ErrSendPanicked, r)
		}
	}()
	return p.Send(requestID, message)
}

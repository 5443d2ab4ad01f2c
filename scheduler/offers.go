package scheduler

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// makeOffers makes offers, one at a time, while a sender and an open
// channel can meet. Only the goroutine running callbacks calls it, so offers
// are made one at a time and the channels listed in an open offer can only
// be closed through that offer (or vanish with their peer). Closing one
// offer and looking for the next share one acquisition of offersMu: that is
// one lock round trip fewer on every request's path.
func (s *Scheduler) makeOffers() {
	s.offersMu.Lock()
	for {
		t, snd, generation, ok := s.openOfferLocked()
		if !ok {
			break
		}
		s.offersMu.Unlock()
		s.callSender(snd, offer.New((*carrier)(s), generation))
		s.offersMu.Lock()
		s.closeOfferLocked(t)
	}
	s.offersMu.Unlock()
}

// openOfferLocked opens an offer to the next sender, if a sender and an open
// channel can meet, and returns the sender and the offer's generation.
// Caller holds offersMu.
func (s *Scheduler) openOfferLocked() (t offer.Ticket, snd offer.Sender, generation uint64, ok bool) {
	if s.stopped || s.pool.Open() == 0 {
		return 0, nil, 0, false
	}
	openings := s.pool.Openings()
	t, snd, ok = s.queue.Next(openings)
	if !ok {
		return 0, nil, 0, false
	}
	// Fairness: while others wait, a sender may close one channel per offer;
	// alone, it may close every channel it is shown.
	size := 1
	if s.queue.Len() == 1 {
		size = s.pool.Open()
	}
	s.choices = s.pool.Best(s.choices[:0], s.maxOffer)
	generation = s.book.Open(t, s.choices, size)
	s.offerOpenings = openings
	s.offering = t
	return t, snd, generation, true
}

// closeOfferLocked closes the open offer to the sender named t once its
// OnOffer has returned: the sender leaves the queue if it sent, and is
// passed over until something new opens if it did not. Caller holds
// offersMu.
func (s *Scheduler) closeOfferLocked(t offer.Ticket) {
	s.offering = 0
	s.offerClosed.Broadcast()
	sent := s.book.Close()
	switch {
	case s.queue.Contains(t) && sent > 0:
		s.queue.Remove(t)
	case s.queue.Contains(t):
		s.queue.Decline(t, s.offerOpenings)
	case s.discardOnClose != nil:
		// Stop came during the offer and left this sender to us: it
		// leaves by its send if it made one, else by discard.
		if sent == 0 {
			s.callbacksMu.Lock()
			s.pending.push(callback{kind: callDiscard, sender: s.discardOnClose})
			s.callbacksMu.Unlock()
		}
		s.discardOnClose = nil
	}
}

// carrier is the Scheduler seen as an offer.Carrier: a distinct method set,
// so the methods offers call do not clutter the Scheduler's own API.
type carrier Scheduler

func (c *carrier) OfferStatus(generation uint64) offer.Status {
	s := (*Scheduler)(c)
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	return s.book.Status(generation)
}

func (c *carrier) OfferChannel(generation uint64, i int) (offer.Channel, bool) {
	s := (*Scheduler)(c)
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	return s.book.Channel(generation, i)
}

// claim closes the i-th channel of the open offer for a send and returns the
// peer to send to. It leaves the offers lock held on success.
func (s *Scheduler) claim(generation uint64, i int) (offer.Channel, peer.Peer, error) {
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return offer.Channel{}, nil, ErrStopped
	}
	ch, err := s.book.Claim(generation, i)
	if err != nil {
		s.offersMu.Unlock()
		return offer.Channel{}, nil, err
	}
	p, ok := s.pool.Get(ch.Ref())
	if !ok {
		s.book.Unclaim(generation, i)
		s.offersMu.Unlock()
		return offer.Channel{}, nil, fmt.Errorf("%w: %q", ErrPeerGone, ch.Peer)
	}
	return ch, p, nil
}

func (c *carrier) OfferRequest(generation uint64, i int, message any, r receiver.Receiver, timeout time.Duration) (receiver.RequestID, error) {
	s := (*Scheduler)(c)
	if r == nil {
		return 0, ErrNilReceiver
	}
	if timeout <= 0 {
		return 0, fmt.Errorf("%w: %v", ErrBadTimeout, timeout)
	}
	ch, p, err := s.claim(generation, i)
	if err != nil {
		return 0, err
	}
	ref := ch.Ref()
	s.requestsMu.Lock()
	if s.table.Len() >= s.maxRequests {
		s.requestsMu.Unlock()
		s.book.Unclaim(generation, i)
		s.offersMu.Unlock()
		return 0, ErrTooManyRequests
	}
	s.pool.Close(ref)
	now := s.now()
	id := s.table.Add(r, ref, now, timeout)
	s.armTimerLocked(now)
	s.requestsMu.Unlock()
	s.offersMu.Unlock()

	if err := s.hostSend(p, uint64(id), message); err != nil {
		s.offersMu.Lock()
		s.requestsMu.Lock()
		if f, ok := s.table.Unsend(id); ok {
			s.pool.Unclose(f.Peer)
		}
		s.book.Unclaim(generation, i)
		s.sendErrors++
		s.requestsMu.Unlock()
		s.offersMu.Unlock()
		err = s.sendFailed(ch.Peer, err)
		s.wantOffers()
		return 0, err
	}

	s.requestsMu.Lock()
	s.counts.sent++
	f, ended := s.table.Sent(id)
	if ended {
		// Something ended the request while the host was sending it. If
		// that was its peer's disconnect, the table has forgotten the
		// peer's ID; the receiver is still owed the name of the peer the
		// request went to.
		f.PeerID = ch.Peer
		s.countEndLocked(&f)
		s.callbacksMu.Lock()
		s.pending.pushFinished(&f)
		s.callbacksMu.Unlock()
	}
	s.requestsMu.Unlock()
	if ended {
		// The channel reopens now, not when the event came: until the send
		// returned, the request held it. (A disconnected peer's channel is
		// gone and stays gone.)
		s.reopenChannel(f.Peer)
	}
	return id, nil
}

func (c *carrier) OfferNotify(generation uint64, i int, message any, digest time.Duration) error {
	s := (*Scheduler)(c)
	if digest <= 0 {
		return fmt.Errorf("%w: %v", ErrBadTimeout, digest)
	}
	ch, p, err := s.claim(generation, i)
	if err != nil {
		return err
	}
	ref := ch.Ref()
	s.pool.Close(ref)
	s.offersMu.Unlock()

	if err := s.hostSend(p, 0, message); err != nil {
		s.offersMu.Lock()
		s.pool.Unclose(ref)
		s.book.Unclaim(generation, i)
		s.sendErrors++
		s.offersMu.Unlock()
		err = s.sendFailed(ch.Peer, err)
		s.wantOffers()
		return err
	}

	// The channel stays closed until the peer has had time to digest the
	// notification; only then is its deadline armed, so a failed send
	// never leaves one behind.
	s.offersMu.Lock()
	s.notified++
	s.requestsMu.Lock()
	stopped := s.stopped
	if !stopped {
		now := s.now()
		s.table.Notify(ref, now, digest)
		s.armTimerLocked(now)
	}
	s.requestsMu.Unlock()
	if stopped {
		s.pool.Reopen(ref)
	}
	s.offersMu.Unlock()
	return nil
}

// sendFailed reports, as a warning, a send the host refused (or panicked
// on), and returns the error the sender gets.
func (s *Scheduler) sendFailed(to peer.ID, err error) error {
	err = fmt.Errorf("peersched: send to %q: %w", to, err)
	s.log.Warn("peersched: host send failed", "peer", string(to), "error", err.Error())
	return err
}

// hostSend calls the host's send, turning a panic into an error so that a
// misbehaving host cannot leave a channel closed forever.
func (s *Scheduler) hostSend(p peer.Peer, requestID uint64, message any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			s.panics.Add(1)
			s.logPanic("peer send", r)
			err = fmt.Errorf("%w: %v", ErrSendPanicked, r)
		}
	}()
	return p.Send(requestID, message)
}

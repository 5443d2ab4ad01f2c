package scheduler

import (
	"fmt"
	"slices"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
)

// Schedule puts snd in the queue of waiting senders, behind those of the same
// or higher priority and ahead of those of lower priority (which a higher
// priority passes only so often: see Config.PassOverLimit), and returns a
// ticket to withdraw it with. snd may be offered channels before Schedule
// returns. It fails, changing nothing, with offer.ErrNilSender,
// offer.ErrTooManySenders or ErrStopped.
func (s *Scheduler) Schedule(snd offer.Sender, priority int) (offer.Ticket, error) {
	return s.ScheduleWith(snd, priority, offer.Options{})
}

// ScheduleWith is Schedule with the sender's terms in opts: its class, the
// size of its messages, what each costs a paced peer, and its wants (see
// offer.Options). A sender whose
// class, or any ancestor, has as many messages in flight as its limit is
// passed over while it is, keeping its place; once a message of the class
// ends it comes first again among those behind it. Its offers let it send
// only as many messages as the class has room for, and as the byte budget
// (Budget.ByteRate) pays for at the size it declares; while the byte
// budget cannot pay for one, the sender waits, keeping its place, and so
// do the senders behind it (see Budget). A sender with wants is offered
// only the channels it wants, and only when at least MinChannels of them
// are open; until then it is passed over, keeping its place. It fails,
// changing nothing, with offer.ErrNilSender, ErrBadBytes (a negative size,
// or one above the byte budget's ByteBurst), ErrBadCost (a negative cost,
// or one above limit.MaxBurst or a connected paced peer's Burst), ErrBadWants (a negative
// MinChannels, one above MaxOfferChannels, or every Only peer avoided),
// ErrStopped, limit.ErrUnknownClass (a class not declared in
// Config.Classes) or offer.ErrTooManySenders.
func (s *Scheduler) ScheduleWith(snd offer.Sender, priority int, opts offer.Options) (offer.Ticket, error) {
	if snd == nil {
		return 0, offer.ErrNilSender
	}
	if err := s.budget.checkBytes(opts.Bytes); err != nil {
		return 0, err
	}
	if err := checkCost(opts.Cost); err != nil {
		return 0, err
	}
	if err := s.checkWants(&opts); err != nil {
		return 0, err
	}
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return 0, ErrStopped
	}
	class, classed := limit.ClassID(0), opts.Class != ""
	if classed {
		var err error
		if class, err = s.classOf(opts.Class); err != nil {
			s.offersMu.Unlock()
			return 0, err
		}
	}
	if s.queue.Len() >= s.maxSenders {
		s.offersMu.Unlock()
		return 0, offer.ErrTooManySenders
	}
	held, err := s.declareCostLocked(opts.Cost)
	if err != nil {
		s.offersMu.Unlock()
		return 0, err
	}
	if held {
		// A peer whose rate paid for a message no longer pays for the
		// dearest: the timer must fire when it does.
		s.armTimerNowLocked()
	}
	var t offer.Ticket
	if classed {
		t = s.queue.PushIn(snd, priority, class)
	} else {
		t = s.queue.Push(snd, priority)
	}
	if s.byteBucket != nil && opts.Bytes > 0 {
		s.queue.SetBytes(t, opts.Bytes)
	}
	if opts.Cost > 0 {
		s.queue.SetCost(t, opts.Cost)
	}
	s.queue.SetWants(t, opts.Only, opts.Avoid, opts.MinChannels)
	s.unlockAndWantOffers()
	return t, nil
}

// checkWants returns an error wrapping ErrBadWants if a sender with the
// wants in opts could never be offered anything.
func (s *Scheduler) checkWants(opts *offer.Options) error {
	switch {
	case opts.MinChannels < 0:
		return fmt.Errorf("%w: MinChannels %d", ErrBadWants, opts.MinChannels)
	case opts.MinChannels > s.maxOffer:
		return fmt.Errorf("%w: MinChannels %d, above MaxOfferChannels %d", ErrBadWants, opts.MinChannels, s.maxOffer)
	}
	if len(opts.Only) == 0 {
		return nil
	}
	for _, id := range opts.Only {
		if !slices.Contains(opts.Avoid, id) {
			return nil
		}
	}
	return fmt.Errorf("%w: every peer in Only is in Avoid", ErrBadWants)
}

// Reoffer asks for another offer to the sender named t, which keeps its
// place in the queue and its priority: it is how a sender that sent
// nothing through an offer, and so was parked, says it has something to
// send again (see offer.Sender). A parked sender is offered channels again
// as soon as its turn comes, possibly before Reoffer returns. Called while
// an offer to the sender is open (from inside its OnOffer, say) or its
// sends are in progress, it keeps that offer's end from parking the
// sender. For a sender waiting for an offer already it changes nothing.
// It returns whether the sender was waiting: false, changing nothing, if
// it has left (by a send, a withdrawal or a discard) or t names none.
func (s *Scheduler) Reoffer(t offer.Ticket) bool {
	s.offersMu.Lock()
	live, open := s.book.Live()
	if !s.queue.Reoffer(t, open && live == t) {
		s.offersMu.Unlock()
		return false
	}
	s.unlockAndWantOffers()
	return true
}

// WithdrawSender takes the sender named t out of the queue. It returns true
// if the sender was still waiting: it is gone from the queue, it is never
// offered channels again nor discarded, and if an offer to it is open, that
// offer expires at once, so no send through it can begin any more. (An offer
// made just before the withdrawal may still reach OnOffer just after it,
// already expired: Len 0, every send failing with offer.ErrExpired.) It
// returns false, changing nothing, if the sender had already left: by a send
// that succeeded, by discard, or by an earlier withdrawal.
//
// WithdrawSender does not wait for a running OnOffer to return, since the
// caller may be that very call or something it waits for (as Stop of a
// time.AfterFunc timer does not wait for its function). A send that OnOffer
// began before the withdrawal finishes as usual; if the host accepts it, the
// request is live and its receiver will be called.
//
// Under a byte budget the withdrawn sender may have been the one the
// senders behind it waited for (see Budget); they are offered channels at
// once if the budget pays for them.
func (s *Scheduler) WithdrawSender(t offer.Ticket) bool {
	s.offersMu.Lock()
	if _, waiting := s.queue.Remove(t); !waiting {
		s.offersMu.Unlock()
		return false
	}
	if live, ok := s.book.Live(); ok && live == t {
		s.book.Expire()
	}
	if s.byteBucket == nil {
		s.offersMu.Unlock()
		return true
	}
	s.unlockAndWantOffers()
	return true
}

package scheduler

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/limit"
)

// A peer connected with a Rate (peer.Options.Rate) is paced: the scheduler
// keeps a limit.Pacer for it and gives the pool the pacer's allowance, how
// many messages the peer's bucket pays for, each counted at the dearest
// cost any sender has declared (offer.Options.Cost) or the Rate's Cost if
// that is more, which caps the peer's open channels. A message is charged
// its own cost, never more than the dearest, so whichever sender closes a
// channel, its send fits; a cheap one leaves the rest in the bucket. The
// allowance is asked of the pacer when the peer connects, after every
// send to it, after a send to it that the host refused (the charge is
// given back), when its bucket pays for a message again, and when a
// sender declares a dearer cost than any before; each send takes one from
// it in between. So the channels an offer lists for a peer are never more
// than its bucket pays for, and every send through them fits. While the
// allowance is 0 the peer waits in a heap ordered by when its bucket will
// pay for one message, and the scheduler's single timer is armed for the
// earliest; when it fires, the peer's channels open and are offered as
// any opening is.
//
// Nothing here runs for a scheduler whose peers have no Rate but one
// boolean test per send and per timer arming (paced).

// pacedPeer is the pacing of the connection in one pool slot.
type pacedPeer struct {
	ref   peerpool.Ref // the connection paced; the zero Ref for none
	pacer *limit.Pacer
	held  bool          // its allowance is 0: it waits in the heap
	due   time.Duration // when, if held, its bucket pays for a message
}

// paceHold is a held peer in the heap: due, then the order held in.
type paceHold struct {
	due   time.Duration
	order uint64
	ref   peerpool.Ref
}

// paceHeap is a binary min-heap of held peers.
type paceHeap struct {
	holds []paceHold
	order uint64
}

func (h *paceHeap) less(i, j int) bool {
	a, b := &h.holds[i], &h.holds[j]
	return a.due < b.due || a.due == b.due && a.order < b.order
}

func (h *paceHeap) push(due time.Duration, ref peerpool.Ref) {
	h.order++
	h.holds = append(h.holds, paceHold{due: due, order: h.order, ref: ref})
	for i := len(h.holds) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h.holds[i], h.holds[parent] = h.holds[parent], h.holds[i]
		i = parent
	}
}

// next returns the earliest due time, if any peer is held.
func (h *paceHeap) next() (time.Duration, bool) {
	if len(h.holds) == 0 {
		return 0, false
	}
	return h.holds[0].due, true
}

func (h *paceHeap) pop() paceHold {
	top := h.holds[0]
	last := len(h.holds) - 1
	h.holds[0] = h.holds[last]
	h.holds = h.holds[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < last && h.less(l, least) {
			least = l
		}
		if r < last && h.less(r, least) {
			least = r
		}
		if least == i {
			return top
		}
		h.holds[i], h.holds[least] = h.holds[least], h.holds[i]
		i = least
	}
}

// paceLocked starts pacing the peer ref names, just connected, with p.
// Caller holds offersMu.
func (s *Scheduler) paceLocked(ref peerpool.Ref, p *limit.Pacer, now time.Duration) {
	s.paced = true
	slot := ref.Slot()
	for len(s.pacing) <= slot {
		s.pacing = append(s.pacing, pacedPeer{})
	}
	s.pacing[slot] = pacedPeer{ref: ref, pacer: p}
	s.allowLocked(&s.pacing[slot], now)
}

// pacedLocked returns the pacing of the connection ref names, or nil if it
// is not paced (or gone). Caller holds offersMu.
func (s *Scheduler) pacedLocked(ref peerpool.Ref) *pacedPeer {
	if slot := ref.Slot(); slot < len(s.pacing) && s.pacing[slot].ref == ref {
		return &s.pacing[slot]
	}
	return nil
}

// allowLocked gives the pool the allowance pp's pacer has at now, and holds
// the peer if it is 0. It reports whether the peer's open channels grew.
// Caller holds offersMu.
func (s *Scheduler) allowLocked(pp *pacedPeer, now time.Duration) bool {
	n := pp.pacer.Allows(now)
	if n == 0 {
		pp.held, pp.due = true, now+pp.pacer.Wait(now)
		s.holds.push(pp.due, pp.ref)
	} else {
		pp.held = false
	}
	return s.pool.SetAllowance(pp.ref, int(min(n, int64(maxInt32))))
}

const maxInt32 = 1<<31 - 1

// chargeLocked charges the pacer of the peer ref names, if it is paced,
// for a message of the open offer whose send begins now (its channel just
// closed): what its sender declared it costs, or the peer's Rate.Cost. It
// returns the charge, to give back if the host refuses the send, and
// reports whether the peer is now held, so the caller arms the timer.
// Caller holds offersMu.
func (s *Scheduler) chargeLocked(ref peerpool.Ref) (charged int64, held bool) {
	pp := s.pacedLocked(ref)
	if pp == nil {
		return 0, false
	}
	now := s.now()
	// The cost is at most the pacer's dearest (ScheduleWith and
	// ConnectWith see to it), and the allowance the offer was cut to,
	// counted at the dearest, pays for it: neither call can fail.
	cost, _ := pp.pacer.Cost(s.offerCost)
	if ok, _ := pp.pacer.Take(now, cost); ok {
		charged = cost
	}
	s.allowLocked(pp, now)
	return charged, pp.held
}

// unchargeLocked gives the pacer of the peer ref names back charged, the
// charge of a message the host refused, if the peer is still connected
// and paced. Caller holds offersMu.
func (s *Scheduler) unchargeLocked(ref peerpool.Ref, charged int64) {
	if pp := s.pacedLocked(ref); pp != nil && charged > 0 {
		_ = pp.pacer.Give(charged) // what Take took: within the burst
		s.allowLocked(pp, s.now())
	}
}

// checkCost returns an error wrapping ErrBadCost for a cost no paced peer
// could ever pay: a negative one, or one above limit.MaxBurst.
func checkCost(cost int64) error {
	if cost < 0 || cost > limit.MaxBurst {
		return fmt.Errorf("%w: %d units: need 0 <= cost <= %d", ErrBadCost, cost, limit.MaxBurst)
	}
	return nil
}

// declareCostLocked takes cost, declared by a sender being scheduled, as
// the dearest cost if it is more than any declared before, and has every
// paced peer's pacer count at it from now on, so that every channel a
// paced peer offers pays for any sender's message. It fails, changing
// nothing, with an error wrapping ErrBadCost if the Burst of a connected
// paced peer is below cost: that peer could never pay for the message.
// It reports whether a peer is now held, so the caller arms the timer.
// Caller holds offersMu.
func (s *Scheduler) declareCostLocked(cost int64) (held bool, err error) {
	if cost <= s.dearest {
		return false, nil
	}
	for i := range s.pacing {
		if p := s.pacing[i].pacer; p != nil && cost > p.Rate().Burst {
			return false, fmt.Errorf("%w: %d units, above a connected paced peer's burst of %d", ErrBadCost, cost, p.Rate().Burst)
		}
	}
	s.dearest = cost
	now := s.now()
	for i := range s.pacing {
		pp := &s.pacing[i]
		if pp.pacer == nil || cost <= pp.pacer.Dearest() {
			continue
		}
		if err := pp.pacer.RaiseDearest(cost); err != nil {
			panic(err) // ruled out above
		}
		wasHeld := pp.held
		s.allowLocked(pp, now)
		held = held || pp.held && !wasHeld
	}
	return held, nil
}

// unpaceLocked forgets the pacing of the connection ref names, which has
// disconnected; a hold of it left in the heap is skipped when it comes
// due. Caller holds offersMu.
func (s *Scheduler) unpaceLocked(ref peerpool.Ref) {
	if pp := s.pacedLocked(ref); pp != nil {
		*pp = pacedPeer{}
	}
}

// refillDueLocked gives every held peer whose bucket pays for a message by
// now its allowance, and reports whether any peer's channels opened.
// Caller holds offersMu.
func (s *Scheduler) refillDueLocked(now time.Duration) (opened bool) {
	for {
		due, ok := s.holds.next()
		if !ok || due > now {
			return opened
		}
		h := s.holds.pop()
		pp := s.pacedLocked(h.ref)
		if pp == nil || !pp.held || pp.due != h.due {
			continue // gone, or released since, or held again later
		}
		opened = s.allowLocked(pp, now) || opened
	}
}

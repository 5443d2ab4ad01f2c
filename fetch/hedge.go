package fetch

import (
	"cmp"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/offer"
)

// Hedging. At the end of a fetch no hash waits to be asked, the channels that
// open have nothing to carry, and the fetch waits for its slowest requests:
// a whole timeout if an answer was lost or spoofed. So once nothing waits, a
// request past its soft deadline (its peer's p95-like response time, from
// the timeout policy, package rto) is asked again of another, healthy peer,
// once; the first answer that verifies wins, the other is ignored. The extra
// load is small: it happens only at the tail, each request is hedged at most
// once, and the hedge budget (package hedge) caps the hedges at a share of
// the fetch's requests, Config.HedgesPerThousand.
//
// At the tail the sender may not be in the queue, or may have declined its
// last offer, and no channel may be about to open; so a timer brings the
// sender back when the first request not yet hedged passes its soft
// deadline. (When the scheduler can tell a receiver that its request is
// slow, that callback will replace the timer.)

// hedgeTimer is the one timer that wakes the sender for hedging.
type hedgeTimer struct {
	timer *clock.Timer
	at    time.Time // when it fires, if armed
	gen   uint64    // names the armed timer to its callback
}

func (h *hedgeTimer) stopLocked() {
	if h.timer != nil {
		h.timer.Stop()
		h.timer = nil
	}
	h.gen++
}

// firstSlowLocked returns the request in flight that is not a hedge and has
// not been hedged whose soft deadline comes first (by ID among equals), or
// nil.
func (b *bulk) firstSlowLocked() *request {
	var first *request
	for _, r := range b.inFlight {
		if r.hedged {
			continue
		}
		if first == nil || slowerFirst(r, first) < 0 {
			first = r
		}
	}
	return first
}

// slowerFirst orders requests by soft deadline, then ID: the order in which
// they became slow.
func slowerFirst(x, y *request) int {
	return cmp.Or(x.slowAt.Compare(y.slowAt), cmp.Compare(x.id, y.id))
}

// hedgeLocked hedges the slow requests on the channels of o not used yet,
// healthy peers first, as far as the budget allows, and returns how many it
// sent. Each channel takes the first slow request that did not go to the
// channel's peer; the requests are ranked once per offer, not once per
// channel, because an offer at the tail can list every channel of a pool of
// busy peers.
func (b *bulk) hedgeLocked(o offer.Offer, now time.Time) int {
	var ranked []*request // built when the first channel needs it
	first := 0            // ranked[:first] are all hedged now
	sent := 0
	for _, i := range b.order {
		p := b.offered[i]
		if o.Remaining() == 0 {
			break
		}
		if b.used[i] || b.tally.peer(p).streak > 0 {
			continue
		}
		if ranked == nil {
			ranked = b.slowLocked(now)
		}
		for first < len(ranked) && ranked[first].hedged {
			first++
		}
		var r *request
		for _, c := range ranked[first:] {
			if !c.hedged && c.to != p {
				r = c
				break
			}
		}
		if r == nil {
			continue
		}
		if !b.budget.Spend() {
			break
		}
		r.hedged = true
		hashes := b.front.hedge(make([]ledger.Hash, 0, len(r.hashes)), r.hashes)
		if len(hashes) == 0 {
			b.budget.Refund() // nothing of it is still asked: no hedge
			continue
		}
		if !b.requestLocked(o, i, p, hashes, true) {
			b.budget.Refund()
			b.hedgeFailedLocked(hashes)
			continue
		}
		b.tally.hedges++
		b.used[i] = true
		sent++
	}
	return sent
}

// slowLocked returns the requests in flight past their soft deadline that
// are not hedges and have not been hedged, in the order they became slow.
// It returns an empty, non-nil slice if there are none.
func (b *bulk) slowLocked(now time.Time) []*request {
	ranked := make([]*request, 0, 8)
	for _, r := range b.inFlight {
		if !r.hedged && !now.Before(r.slowAt) {
			ranked = append(ranked, r)
		}
	}
	slices.SortFunc(ranked, slowerFirst)
	return ranked
}

// armHedgeLocked arms the hedge timer for the first soft deadline of a
// request not yet hedged (or, if that moment has passed and the request
// could not be hedged, for as long again as that request's soft deadline
// from now), unless it is armed earlier. With the budget spent it arms
// nothing: only a request sent can earn the next hedge, and a send comes
// with an offer, which hedges.
func (b *bulk) armHedgeLocked(now time.Time) {
	if b.finished || b.budget.Tokens() == 0 {
		return
	}
	r := b.firstSlowLocked()
	if r == nil {
		return
	}
	at := r.slowAt
	if !at.After(now) {
		at = now.Add(r.slowAt.Sub(r.sentAt))
	}
	h := &b.hedging
	if h.timer != nil && !h.at.After(at) {
		return
	}
	h.stopLocked()
	gen := h.gen
	h.at = at
	h.timer = b.cfg.Clock.AfterFunc(at.Sub(now), func() { b.onHedgeTimer(gen) })
}

// onHedgeTimer runs on the clock's goroutine, outside every callback: it
// brings the sender back into the queue, fresh, so that it is offered the
// channels open now and can hedge on them.
func (b *bulk) onHedgeTimer(gen uint64) {
	b.mu.Lock()
	if b.finished || gen != b.hedging.gen {
		b.mu.Unlock()
		return
	}
	b.hedging.timer = nil
	idle := b.front.waitingCount() == 0 && b.tally.inFlight > 0
	queued, declined, ticket := b.queued, b.declined, b.ticket
	b.mu.Unlock()
	switch {
	case !idle:
	case !queued:
		b.scheduleFromOutside()
	case declined && ticket != 0 && b.withdrawFromOutside(ticket):
		b.scheduleFromOutside()
	}
}

package fetch

import (
	"cmp"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/rto"
)

// Hedging. At the end of a fetch no hash waits to be asked, the channels that
// open have nothing to carry, and the fetch waits for its slowest requests:
// a whole timeout if an answer was lost or spoofed. So once nothing waits, a
// request that has been out longer than the fetch's response-time estimate
// (see hedgeAfterLocked) is asked again of another, healthy peer, once; the
// first answer that verifies wins, the other is ignored. The extra load is
// small: it happens only at the tail, and each request is hedged at most
// once.
//
// At the tail the sender may not be in the queue, or may have declined its
// last offer, and no channel may be about to open; so a timer brings the
// sender back when the oldest request becomes worth hedging.

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

// hedgeAfterLocked returns how long a request must have been out to be
// hedged: the estimate over every peer's answers, or MinTimeout while no
// answer has come (the first request of all may have gone to a peer that
// never answers).
func (b *bulk) hedgeAfterLocked() time.Duration {
	srtt, rttvar, ok := b.timing.(*rto.Estimator).Pool()
	if !ok {
		return b.cfg.MinTimeout
	}
	return min(srtt+4*rttvar, b.cfg.Timeout)
}

// oldestLocked returns the oldest request in flight, sent at least after
// ago, that is not a hedge, has not been hedged, and did not go to p (which
// may be empty); or nil.
func (b *bulk) oldestLocked(now time.Time, after time.Duration, p peer.ID) *request {
	var oldest *request
	for _, r := range b.inFlight {
		if r.hedged || r.to == p || now.Sub(r.sentAt) < after {
			continue
		}
		if oldest == nil || r.sentAt.Before(oldest.sentAt) || (r.sentAt.Equal(oldest.sentAt) && r.id < oldest.id) {
			oldest = r
		}
	}
	return oldest
}

// hedgeLocked hedges the oldest requests worth it on the channels of o not
// used yet, healthy peers first, and returns how many it sent. Each channel
// takes the oldest request worth it that did not go to the channel's peer;
// the requests are ranked once per offer, not once per channel, because an
// offer at the tail can list every channel of a pool of busy peers.
func (b *bulk) hedgeLocked(o offer.Offer, now time.Time) int {
	after := b.hedgeAfterLocked()
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
			ranked = b.hedgeableLocked(now, after)
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
		r.hedged = true
		hashes := b.front.hedge(make([]ledger.Hash, 0, len(r.hashes)), r.hashes)
		if len(hashes) == 0 {
			continue
		}
		if !b.requestLocked(o, i, p, hashes, true) {
			b.hedgeFailedLocked(hashes)
			continue
		}
		b.tally.hedges++
		b.used[i] = true
		sent++
	}
	return sent
}

// hedgeableLocked returns the requests in flight sent at least after ago
// that are not hedges and have not been hedged, oldest first (by send time,
// then ID): the order oldestLocked picks them in. It returns an empty,
// non-nil slice if there are none.
func (b *bulk) hedgeableLocked(now time.Time, after time.Duration) []*request {
	ranked := make([]*request, 0, 8)
	for _, r := range b.inFlight {
		if !r.hedged && now.Sub(r.sentAt) >= after {
			ranked = append(ranked, r)
		}
	}
	slices.SortFunc(ranked, func(x, y *request) int {
		return cmp.Or(x.sentAt.Compare(y.sentAt), cmp.Compare(x.id, y.id))
	})
	return ranked
}

// armHedgeLocked arms the hedge timer for when the oldest request not yet
// hedged becomes worth hedging (or, if that moment has passed and it could
// not be hedged, for one estimate from now), unless it is armed earlier.
func (b *bulk) armHedgeLocked(now time.Time) {
	if b.finished {
		return
	}
	after := b.hedgeAfterLocked()
	r := b.oldestLocked(now.Add(after), after, "")
	if r == nil {
		return
	}
	at := r.sentAt.Add(after)
	if !at.After(now) {
		at = now.Add(after)
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

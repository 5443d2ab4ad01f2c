package fetch

import (
	"time"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/peer"
)

// The tail. Every request goes through the library's Hedger (package
// hedge), which the scheduler tells when a request passes its soft
// deadline (its peer's p95-like response time, from package timeouts). What
// the fetch decides is when a slow request is worth a hedge: only at the
// tail, once no hash waits to be asked. Before that the channels have
// work to carry, a hedge would take one from it, and the budget would be
// spent where it buys nothing; at the tail the fetch waits for its slowest
// requests, a whole timeout if an answer was lost or spoofed, and a second
// peer's answer ends that wait. So a request that becomes slow while work
// waits is remembered, and hedged (oldest first, as the budget allows)
// when the last waiting hash has been asked.

// A request is a hedge.Receiver: the Hedger asks it before hedging and tells
// it where each hedge went.
var _ hedge.Receiver = (*request)(nil)

// WantHedge keeps the slow request for hedgeSlowLocked, which hedges it at
// once if nothing waits to be asked. Implements hedge.Receiver.
func (r *request) WantHedge(hedge.CallID, peer.ID) bool {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return false
	}
	b.slow = append(b.slow, r)
	b.hedgeSlowLocked()
	return false
}

// OnHedge counts the hedge, sent to to: a request of the fetch's, in
// flight at to until the request ends. Implements hedge.Receiver.
func (r *request) OnHedge(_ hedge.CallID, to peer.ID) {
	b := r.b
	now := b.cfg.Clock.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	r.hedgedTo, r.hedgedAt = to, now
	b.tally.sent(to)
	b.tally.hedges++
}

// hedgeSlowLocked hedges, once no hash waits to be asked, the slow requests
// kept while work waited, in the order they became slow, until the Hedger
// declines one (its budget spent, or the hedge not queued); those left wait
// for the next call (a request sent earns the budget a share of a hedge).
// Each hedge avoids the peers the judge penalises now (see
// judgedScheduler). Every caller calls it when work may have run out; it
// decides.
func (b *bulk) hedgeSlowLocked() {
	if b.front.waitingCount() > 0 || len(b.slow) == 0 {
		return
	}
	avoid := b.avoidLocked(b.cfg.Clock.Now())
	b.hedgeAvoid.Store(&avoid)
	kept := b.slow[:0]
	for i, r := range b.slow {
		if b.inFlight[r.id] != r {
			continue // ended
		}
		if !b.hedger.Hedge(r.id) {
			kept = append(kept, b.slow[i:]...)
			break
		}
	}
	clear(b.slow[len(kept):])
	b.slow = kept
}

// endOtherLocked ends, in the tally, the request of r's pair that did not
// give r its outcome (the Hedger withdrew it, or it failed first), if a
// hedge went, and returns when the one that did, from's, was sent.
func (r *request) endOtherLocked(from peer.ID) time.Time {
	if r.hedgedTo == "" {
		return r.sentAt
	}
	if from == r.hedgedTo {
		r.b.tally.ended(r.to)
		return r.hedgedAt
	}
	r.b.tally.ended(r.hedgedTo)
	return r.sentAt
}

package node

import (
	"context"
	"sync"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
)

// schedRelay is the relay component on the shared scheduler: each
// notification is a sender of its own at PriorityRelay that wants only its
// peer's channels, and closes one until its digest time. A peer keeps at
// most one notification waiting: a tick that finds the last one to a peer
// still waiting skips that peer, and counts it in Failed, so a peer the
// scheduler holds back (its channels all busy, its rate spent, the budget
// spent) does not pile notifications up in the queue.
type schedRelay struct {
	cfg Config
	s   *scheduler.Scheduler
	rec recorder

	mu      sync.Mutex
	waiting map[peer.ID]bool // guarded by mu: a notification to the peer waits
	usage   []peer.Usage     // scratch of run's goroutine
}

// notice is one notification waiting to be sent.
type notice struct {
	r      *schedRelay
	to     peer.ID
	wanted time.Time
}

// run sends a notification to every connected peer every period until ctx
// ends.
func (r *schedRelay) run(ctx context.Context) {
	tick(ctx, r.cfg, every(r.cfg.Relay), func(now time.Time) {
		r.usage = r.s.PeerUsage(r.usage[:0])
		for _, u := range r.usage {
			r.mu.Lock()
			skip := r.waiting[u.ID]
			if !skip {
				r.waiting[u.ID] = true
			}
			r.mu.Unlock()
			if skip {
				r.rec.failure()
				continue
			}
			n := &notice{r: r, to: u.ID, wanted: now}
			if _, err := r.s.ScheduleWith(n, PriorityRelay, offer.Options{Only: []peer.ID{u.ID}, Bytes: NoticeBytes, Cost: NoticeCost}); err != nil {
				r.done(u.ID)
				r.rec.failure()
			}
		}
	})
}

// done marks the notification to id as no longer waiting.
func (r *schedRelay) done(id peer.ID) {
	r.mu.Lock()
	delete(r.waiting, id)
	r.mu.Unlock()
}

// OnOffer sends the notification on the channel offered (its peer's).
func (n *notice) OnOffer(o offer.Offer) {
	now := n.r.cfg.Clock.Now()
	for i := range o.All() {
		if o.Notify(i, Notice, n.r.cfg.Digest) == nil {
			n.r.done(n.to)
			n.r.rec.sent()
			wait := now.Sub(n.wanted)
			n.r.rec.completed(wait, wait)
			return
		}
	}
	// Nothing went: parked, and the peer's next tick is skipped while it
	// stays so; the scheduler discards it when it stops.
}

// OnDiscard: the scheduler stopped while the notification waited.
func (n *notice) OnDiscard() { n.r.done(n.to) }

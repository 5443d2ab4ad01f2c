package node

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
)

// objectsType is the answer a lookup expects: the scheduler refuses any
// other, and the lookup waits on for its right one.
var objectsType = reflect.TypeFor[ledger.Objects]()

// keyPicker draws the nodes lookups ask for, at random with replacement,
// from the seed. It is safe for concurrent use.
type keyPicker struct {
	mu   sync.Mutex
	keys []ledger.Hash
	rng  *rand.Rand
}

func newKeyPicker(keys []ledger.Hash, seed uint64) *keyPicker {
	return &keyPicker{keys: keys, rng: rand.New(rand.NewPCG(seed, 0x10c))}
}

func (k *keyPicker) next() ledger.Hash {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys[k.rng.IntN(len(k.keys))]
}

// tick calls f every period on clk until ctx ends, the first time a period
// after it is called.
func tick(ctx context.Context, cfg Config, period time.Duration, f func(now time.Time)) {
	t := cfg.Clock.Ticker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f(now)
		}
	}
}

// schedLookups is the lookup component on the shared scheduler: each
// lookup is a sender of its own at PriorityLookup, which sends one request
// on the best channel it is offered.
type schedLookups struct {
	cfg  Config
	s    *scheduler.Scheduler
	keys *keyPicker
	rec  recorder

	mu      sync.Mutex
	stopped bool // guarded by mu: answers after it are not counted
}

// lookup is one lookup through the scheduler: its sender, and the receiver
// of its current try.
type lookup struct {
	c      *schedLookups
	hash   ledger.Hash
	wanted time.Time // when the lookup began
	// The following fields are touched only by the lookup's callbacks and
	// by the call that schedules it, which the scheduler orders.
	scheduled time.Time     // when the current try was scheduled
	queued    time.Duration // time waited in the queue, tries added up
	tries     int
	avoid     []peer.ID
}

// run starts a lookup every period until ctx ends.
func (c *schedLookups) run(ctx context.Context) {
	tick(ctx, c.cfg, every(c.cfg.Lookups), func(now time.Time) {
		l := &lookup{c: c, hash: c.keys.next(), wanted: now}
		l.try(now)
	})
}

// try schedules the lookup's next try, avoiding the peers tried before.
func (l *lookup) try(now time.Time) {
	l.tries++
	l.scheduled = now
	tr := &lookupTry{l: l}
	t, err := l.c.s.ScheduleWith(tr, PriorityLookup, offer.Options{Avoid: l.avoid, Bytes: LookupBytes})
	if err != nil {
		l.c.rec.failure()
		return
	}
	tr.scheduled(t)
}

// lookupTry is the sender of one try of a lookup. A try whose every send
// failed is withdrawn (the offer's end would park it, and nothing would
// offer it a channel again) and the lookup tries again. Its ticket is known
// only once ScheduleWith returns, which may be after its OnOffer has run
// (inline callbacks run it within the call; the drainer may run it
// meanwhile), so whichever of the two comes second withdraws it.
type lookupTry struct {
	l *lookup

	mu       sync.Mutex
	ticket   offer.Ticket // guarded by mu; set when known is
	known    bool         // guarded by mu
	stranded bool         // guarded by mu: every send failed; withdraw once known
}

// scheduled records the try's ticket, and withdraws the try if its offer
// has already found every send failing.
func (tr *lookupTry) scheduled(t offer.Ticket) {
	tr.mu.Lock()
	tr.ticket, tr.known = t, true
	stranded := tr.stranded
	tr.mu.Unlock()
	if stranded {
		tr.l.c.s.WithdrawSender(t)
	}
}

// strand withdraws the try, or has scheduled withdraw it once its ticket is
// known.
func (tr *lookupTry) strand() {
	tr.mu.Lock()
	t, known := tr.ticket, tr.known
	tr.stranded = !known
	tr.mu.Unlock()
	if known {
		tr.l.c.s.WithdrawSender(t)
	}
}

// OnOffer sends the lookup's request on the best channel offered; if every
// send fails, the try is spent and the lookup tries again (or, after its
// last, fails).
func (tr *lookupTry) OnOffer(o offer.Offer) {
	l := tr.l
	now := l.c.cfg.Clock.Now()
	for i, ch := range o.All() {
		_, err := o.Send(i, offer.Request{
			Message:  ledger.GetObjects{Hashes: []ledger.Hash{l.hash}},
			Receiver: l,
			Timeout:  l.c.cfg.LookupTimeout,
			Expect:   objectsType,
		})
		if err == nil {
			l.queued += now.Sub(l.scheduled)
			l.avoid = append(l.avoid, ch.Peer)
			l.c.rec.sent()
			return
		}
	}
	tr.strand()
	l.again(now)
}

// OnDiscard: the scheduler stopped while the try waited.
func (*lookupTry) OnDiscard() {}

// OnResponse completes the lookup if the answer holds its node, or tries
// again.
func (l *lookup) OnResponse(_ peer.RequestID, _ peer.ID, response any) {
	if l.c.isStopped() {
		return
	}
	now := l.c.cfg.Clock.Now()
	if holds(response.(ledger.Objects), l.hash) {
		l.c.rec.completed(now.Sub(l.wanted), l.queued)
		return
	}
	l.again(now)
}

// OnFailure tries again, unless the scheduler stopped.
func (l *lookup) OnFailure(_ peer.RequestID, _ peer.ID, reason receiver.Reason) {
	if reason == receiver.Shutdown || l.c.isStopped() {
		return
	}
	l.again(l.c.cfg.Clock.Now())
}

// again makes another try, or gives up after the last.
func (l *lookup) again(now time.Time) {
	if l.tries >= l.c.cfg.LookupTries {
		l.c.rec.failure()
		return
	}
	l.try(now)
}

func (c *schedLookups) isStopped() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped
}

func (c *schedLookups) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
}

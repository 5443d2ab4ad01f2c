package fetch

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
)

// Run fetches the ledger named by cfg.Root through s and returns when every
// node has arrived and verified (with a nil error), or when the fetch cannot
// finish: the scheduler stopped, the ledger is broken, ctx ended, or no
// object verified for cfg.StallTimeout. The error is then an
// *IncompleteError. If every node verified but a Write to cfg.Store failed,
// the error is that Write's, not an *IncompleteError, and the Report is
// Complete. The Report describes the fetch either way.
//
// The caller owns s and its peers: it connects them before or during the
// fetch and wires their responses to s.Deliver (and their refusals, if the
// transport can tell one, to s.Refuse). Other components may share s;
// the fetch's sender waits in its queue at cfg.Priority. Give s the clock in
// cfg.Clock.
//
// When Run returns, its sender, its hedges still waiting, and the
// receivers of its requests and hedges still in flight have been
// withdrawn, and none of its callbacks changes anything any more; those
// requests' channels reopen when their responses or deadlines come. Run fails at once with an error wrapping ErrBadConfig, or
// scheduler.ErrStopped if s is stopped.
func Run(ctx context.Context, s *scheduler.Scheduler, cfg Config) (Report, error) {
	return runFetch(ctx, s, cfg, nil)
}

// runFetch is Run; started, if set, is handed the fetch's sender before it
// is first scheduled (for tests that check the sender's invariants).
func runFetch(ctx context.Context, s *scheduler.Scheduler, cfg Config, started func(*bulk)) (Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Report{}, err
	}
	b := newBulk(cfg, s)
	if started != nil {
		started(b)
	}
	before := s.Stats()
	if before.Stopped {
		return Report{}, scheduler.ErrStopped
	}
	start := cfg.Clock.Now()
	b.mu.Lock()
	b.beginLocked(start)
	b.mu.Unlock()
	b.scheduleFromOutside()

	w := b.watch(ctx, start, b.load)

	b.mu.Lock()
	b.finished = true
	queued, ticket := b.queued, b.ticket
	ids := make([]hedge.CallID, 0, len(b.inFlight))
	for id := range b.inFlight {
		ids = append(ids, id)
	}
	b.mu.Unlock()
	if queued && ticket != 0 {
		s.WithdrawSender(ticket)
	}
	for _, id := range ids {
		b.hedger.Withdraw(id)
	}
	after := s.Stats()
	dropped := Dropped{
		WrongType: int(after.WrongType - before.WrongType),
		Duplicate: int(after.Duplicate - before.Duplicate),
		Late:      int(after.Late - before.Late),
		WrongPeer: int(after.WrongPeer - before.WrongPeer),
		Unknown:   int(after.Unknown - before.Unknown),
	}
	return b.end("scheduler", start, w, b.load(), dropped)
}

// bulk is the fetch's sender: the seed's bulk pattern, one sender that
// sends on every channel an offer lets it close and schedules a continuation
// of itself while work remains. It is also the owner of every request's
// receiver.
//
// A sender that sends nothing stays in the queue, parked: it is offered
// nothing more until it asks again. So when work appears while the sender
// waits having declined (an answer brings new hashes, a failure puts
// hashes back), it asks again with the scheduler's Reoffer, keeping its
// place, and is offered the channels that are open then. Every decline
// with work waiting leaves a request of the fetch in flight (see OnOffer),
// whose end brings such a wake-up.
type bulk struct {
	*state
	sched *scheduler.Scheduler

	// The following fields are guarded by mu.
	queued   bool                      // the sender is in the scheduler's queue
	declined bool                      // ...and declined its last offer
	ticket   offer.Ticket              // its ticket; 0 while Run's first Schedule has not returned
	gen      uint64                    // bumped whenever the queued sender changes
	poke     bool                      // a wake-up came while the ticket was unknown
	avoiding []peer.ID                 // the Avoid the queued sender was scheduled with (see avoidLocked)
	inFlight map[hedge.CallID]*request // by the Hedger's name for each
	slow     []*request                // past their soft deadlines, not hedged yet (see tail.go)
	offered  []peer.ID                 // scratch for OnOffer: the peer of each channel
	// refusedSends counts the sends the host refused in the offer open.
	refusedSends int
	order        []int         // scratch for OnOffer: channel indices in the order tried
	ranks        []channelRank // scratch for OnOffer: what fastestFirst ranks each channel by

	hedger *hedge.Hedger // sends every request, and hedges them at the tail
	// hedgeAvoid is the peers the judge penalised when hedgeSlowLocked last
	// ran: the hedges it queues avoid them (see judgedScheduler). Atomic,
	// since the Hedger reads it through the scheduler it was given.
	hedgeAvoid atomic.Pointer[[]peer.ID]
}

// refusedRetryWait is how long a sender whose every send the host refused,
// with nothing of the fetch in flight, waits before it asks for another
// offer: tcpnet's first redial wait.
const refusedRetryWait = 50 * time.Millisecond

// objectsType is the type of every answer the fetch's requests accept
// (offer.Request.Expect): the answer to a ledger.GetObjects.
var objectsType = reflect.TypeFor[ledger.Objects]()

// request is one GetObjects in flight, perhaps hedged, and its receiver
// (a hedge.Receiver: the Hedger calls it once, with the first answer, or
// the failure when both its requests have failed).
type request struct {
	b      *bulk
	id     hedge.CallID
	to     peer.ID
	hashes []ledger.Hash
	sentAt time.Time
	// The following fields are guarded by b.mu.
	hedgedTo peer.ID   // the peer its hedge went to; "" if none went
	hedgedAt time.Time // when
}

// newBulk returns the sender of a fetch through s, cfg checked.
func newBulk(cfg Config, s *scheduler.Scheduler) *bulk {
	b := &bulk{state: newState(cfg), sched: s, inFlight: make(map[hedge.CallID]*request)}
	h, err := hedge.NewHedger(judgedScheduler{s, b}, newHedgeBudget(cfg), hedge.Options{Priority: cfg.Priority, Sender: offer.Options{Bytes: cfg.Bytes}})
	if err != nil {
		panic(fmt.Sprintf("fetch: hedge.NewHedger refuses a scheduler: %v", err)) // s is not nil
	}
	b.hedger = h
	b.verdicts.wake = b.wakeFromOutside
	return b
}

// judgedScheduler is the scheduler as the fetch's Hedger sees it: every
// hedge it queues avoids, besides the slow request's peer, the peers the
// judge penalised when the fetch asked for hedges (bulk.hedgeAvoid, set by
// hedgeSlowLocked). The Hedger's own avoid list (hedge.Options.Sender) is
// fixed when it is made, and the verdicts change with every answer. A peer
// benched while a hedge already waits is not avoided by that hedge; one
// whose bench ends while it waits stays avoided until the hedge is sent
// or withdrawn.
type judgedScheduler struct {
	*scheduler.Scheduler
	b *bulk
}

// ScheduleWith queues a hedge's sender avoiding the penalised peers too.
func (j judgedScheduler) ScheduleWith(snd offer.Sender, priority int, opts offer.Options) (offer.Ticket, error) {
	if avoid := j.b.hedgeAvoid.Load(); avoid != nil {
		opts.Avoid = append(slices.Clip(opts.Avoid), *avoid...)
	}
	return j.Scheduler.ScheduleWith(snd, priority, opts)
}

// newHedgeBudget returns the fetch's hedge budget: cfg.HedgesPerThousand of
// its requests, after a burst of hedge.DefaultBurst. Its cap is out of any
// fetch's reach, because a fetch hedges only at its end, where it must find
// what its whole run earned.
func newHedgeBudget(cfg Config) *hedge.Budget {
	b, err := hedge.NewBudget(cfg.hedging())
	if err != nil {
		// withDefaults has made this very call.
		panic(fmt.Sprintf("fetch: a checked config fails hedge.NewBudget: %v", err))
	}
	return b
}

// load reads the scheduler's peers' channels.
func (b *bulk) load() hostLoad { return usageLoad(b.sched.PeerUsage(nil)) }

// scheduleFromOutside schedules the sender, unless it is in the queue
// already, from a goroutine that is not running a callback (Run). The
// offer may come, and other callbacks run, before Schedule returns, so the
// lock is not held across it, and the ticket is kept only if no offer has
// replaced the sender in the meantime. A wake-up that needed the ticket
// meanwhile (the sender declined, and work came) is carried out here.
func (b *bulk) scheduleFromOutside() {
	b.mu.Lock()
	if b.queued || b.finished {
		// Never twice: a second copy in the queue would make every
		// offer a fair share of one channel, and outlive the fetch.
		b.mu.Unlock()
		return
	}
	b.queued, b.declined, b.ticket = true, false, 0
	b.gen++
	gen := b.gen
	b.avoiding = b.avoidLocked(b.cfg.Clock.Now())
	opts := offer.Options{Avoid: b.avoiding, Bytes: b.cfg.Bytes}
	b.mu.Unlock()

	t, err := b.sched.ScheduleWith(b, b.cfg.Priority, opts)

	b.mu.Lock()
	if err != nil {
		if b.gen == gen {
			b.queued = false
		}
		b.failLocked(fmt.Errorf("cannot schedule the fetch: %w", err))
		b.mu.Unlock()
		return
	}
	if b.gen != gen {
		b.mu.Unlock()
		return // an offer took the sender out and (maybe) scheduled its continuation
	}
	b.ticket = t
	poke := b.poke && b.declined && !b.finished
	b.poke = false
	if poke {
		b.declined = false
	}
	b.mu.Unlock()
	if poke {
		// Not under the lock: with inline callbacks the offer may come,
		// and take it, before Reoffer returns.
		b.sched.Reoffer(t)
	}
}

// scheduleLocked schedules the sender from inside a callback, where
// Schedule only queues the offer for later, so the lock may be held. Like
// scheduleFromOutside, it has the scheduler avoid the peers the judge
// penalises: their channels would otherwise lead every offer (a peer with
// nothing in flight ranks first) and crowd out the channels the fetch can
// use.
func (b *bulk) scheduleLocked() {
	b.gen++
	b.avoiding = b.avoidLocked(b.cfg.Clock.Now())
	t, err := b.sched.ScheduleWith(b, b.cfg.Priority, offer.Options{Avoid: b.avoiding, Bytes: b.cfg.Bytes})
	if err != nil {
		b.queued = false
		b.failLocked(fmt.Errorf("cannot schedule the fetch: %w", err))
		return
	}
	b.queued, b.declined, b.ticket = true, false, t
}

// wakeLocked makes sure an offer will come if work is waiting. Called from
// receiver callbacks after they put work in the frontier.
func (b *bulk) wakeLocked() {
	if b.finished {
		return
	}
	if b.front.waitingCount() == 0 {
		b.hedgeSlowLocked()
		return
	}
	switch {
	case !b.queued:
		b.scheduleLocked()
	case !b.declined:
		// Not offered yet: the next open channel is for it.
	case b.ticket == 0:
		b.poke = true // Run's first Schedule has not returned: it will do this
	case b.sched.Reoffer(b.ticket):
		// From inside a callback, Reoffer only queues the offer, so the
		// lock may be held.
		b.declined = false
	}
}

// wakeFromOutside is wakeLocked for a goroutine that is not running a
// callback (the judge's timer, when a bench that kept requests back ends):
// Schedule and Reoffer may run the offer before they return, so the lock is
// not held across them.
func (b *bulk) wakeFromOutside() {
	b.mu.Lock()
	if b.finished || b.front.waitingCount() == 0 {
		b.mu.Unlock()
		return
	}
	if b.queued && b.ticket != 0 && !slices.Equal(b.avoiding, b.avoidLocked(b.cfg.Clock.Now())) {
		// Queued avoiding a peer whose bench has ended: perhaps passed
		// over for want of another peer's channel. Schedule it afresh.
		t, gen := b.ticket, b.gen
		b.mu.Unlock()
		if b.sched.WithdrawSender(t) {
			b.mu.Lock()
			if b.gen == gen {
				b.queued, b.ticket = false, 0
				b.gen++
			}
			b.mu.Unlock()
		}
		b.scheduleFromOutside()
		return
	}
	switch {
	case !b.queued:
		b.mu.Unlock()
		b.scheduleFromOutside()
		return
	case !b.declined:
		// Not offered yet: the next open channel is for it.
	case b.ticket == 0:
		b.poke = true // Run's first Schedule has not returned: it will do this
	default:
		t := b.ticket
		b.declined = false
		b.mu.Unlock()
		b.sched.Reoffer(t) // false only if the sender left meanwhile: then it is not parked
		return
	}
	b.mu.Unlock()
}

// OnOffer fills every channel of the offer it may with a batch of hashes:
// the scheduler's order, best channel first, except that peers with a
// recent failure come after those without, and that with fewer hashes
// waiting than channels offered the fastest peers come first (see
// fastestFirst). (The scheduler ranks a peer that
// has never answered as if it were the fastest, so a silent peer would
// otherwise get every request at the top of the tree, where there are only
// a few.) A retry avoids the peers that failed it unless no other peer has a
// request of the fetch in flight, so none may offer a channel soon. A
// suspect peer (see suspectStreak) gets a probe of one hash at a time. A
// peer benched or judged useless by the fetch's judge (see
// Config.Penalty) gets nothing: the sender is scheduled avoiding it, and a
// channel of it offered all the same (it was benched after the sender was
// scheduled) is skipped. Its cost is O(channels offered): nothing
// here walks the requests in flight or every peer. When
// nothing waits any more, the requests past their soft deadlines are
// hedged, as the hedge budget allows (see tail.go).
// Implements offer.Sender.
func (b *bulk) OnOffer(o offer.Offer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		b.declined = true
		return
	}
	now := b.cfg.Clock.Now()
	offered, order, ranks := b.offered[:0], b.order[:0], b.ranks[:0]
	for _, ch := range o.All() {
		offered = append(offered, ch.Peer)
		ranks = append(ranks, channelRank{closed: ch.ChannelsClosed, rtt: ch.RTT})
	}
	for pass := range 2 {
		for i, p := range offered {
			if (b.tally.peer(p).streak == 0) == (pass == 0) && b.mayAskLocked(p, now) {
				order = append(order, i)
			}
		}
	}
	if b.front.waitingCount() < len(order) {
		b.countListedLocked(offered, ranks)
		fastestFirst(order, ranks)
	}
	b.offered, b.order, b.ranks = offered, order, ranks

	sent := 0
	b.refusedSends = 0
	for pass := range 2 {
		anyPeer := pass == 1
		if anyPeer && (sent > 0 || b.othersBusyLocked(offered)) {
			break
		}
		for _, i := range order {
			if o.Remaining() == 0 || b.front.waitingCount() == 0 {
				break
			}
			if !b.tally.peer(offered[i]).suspect() && b.sendLocked(o, i, offered[i], anyPeer) {
				sent++
			}
		}
	}
	b.hedgeSlowLocked()
	if sent == 0 {
		b.declined = true
		if b.refusedSends > 0 && len(b.inFlight) == 0 {
			// Every send was refused (a connection closing, say) and
			// nothing of the fetch is in flight, whose end would wake
			// the sender: left parked, it would wait for ever, while
			// other peers' channels open. Wake it a moment later, as
			// the redials do, not at once, which would spin on the
			// refusing channel until its disconnect is processed.
			b.armWakeLocked(now.Add(refusedRetryWait), now)
		}
		return
	}
	// By sending, this sender has left the queue.
	b.queued, b.ticket = false, 0
	b.gen++
	if b.front.waitingCount() > 0 {
		b.scheduleLocked()
	}
}

// countListedLocked adds to each channel's requests in flight the
// channels of its peer listed before it in the offer: the offer's counts
// are those of when it was made, and a peer given the first of its channels
// has one more in flight when the second is ranked. Without it, a fast
// peer's channels would all rank before any other's, and a narrow frontier
// would queue batches at its workers.
func (b *bulk) countListedLocked(offered []peer.ID, ranks []channelRank) {
	b.tally.mark++
	for i, id := range offered {
		p := b.tally.peer(id)
		if p.mark != b.tally.mark {
			p.mark, p.listed = b.tally.mark, 0
		}
		ranks[i].closed += p.listed
		p.listed++
	}
}

// channelRank is what fastestFirst knows of an offered channel's peer.
type channelRank struct {
	closed int           // its requests in flight (offer.Channel.ChannelsClosed), and its channels listed before
	rtt    time.Duration // its smoothed response time; 0 until one of its requests has been answered or has timed out
}

// fastestFirst reorders order, indexes of the channels offered, so that
// among the peers with the fewest requests in flight the fastest come
// first, and before them those that have not answered yet (a smoothed
// time of 0): each gets its chance to be timed, and
// TestNarrowFrontierTakesTheFastestPeer relies on it. It is for a narrow
// frontier, fewer hashes waiting than channels offered, where which channel
// a hash takes decides how soon the next level is known: the scheduler
// ranks idle peers whose times are within a factor of two alike, and
// OnOffer's order puts a peer with a recent failure last, such as a
// neighbour that lacked the top of the tree a moment ago and holds it now.
// A ledger with a chain of single-child inner nodes (ledger 40000 has one
// 49 levels deep: two order book directories share 48 nibbles of their
// keys) is fetched one level per round trip, so each level would otherwise
// cost whichever peer was ranked first. Requests in flight still come
// first, as in the scheduler's ranking, so that a fast peer is not sent
// every narrow batch and queued up. A suspect peer still gets only its one
// probe (see OnOffer), and a benched one nothing.
func fastestFirst(order []int, ranks []channelRank) {
	rtt := func(i int) time.Duration { return ranks[i].rtt }
	slices.SortStableFunc(order, func(i, j int) int {
		if c := cmp.Compare(ranks[i].closed, ranks[j].closed); c != 0 {
			return c
		}
		return cmp.Compare(rtt(i), rtt(j))
	})
}

// OnDiscard is called if the scheduler stops while the sender waits.
// Implements offer.Sender.
func (b *bulk) OnDiscard() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queued = false
	b.gen++
	b.failLocked(scheduler.ErrStopped)
}

// othersBusyLocked reports whether a peer not among offered has a request
// of the fetch in flight, and so will open a channel when it ends. It
// counts the busy peers among offered (each once) against the tally's
// count of busy peers, in O(len(offered)), not O(peers).
func (b *bulk) othersBusyLocked(offered []peer.ID) bool {
	b.tally.mark++
	busyOffered := 0
	for _, id := range offered {
		p := b.tally.peer(id)
		if p.mark != b.tally.mark {
			p.mark = b.tally.mark
			if p.inFlight > 0 {
				busyOffered++
			}
		}
	}
	return b.tally.busyPeers > busyOffered
}

// sendLocked sends a batch on the i-th channel of o, which leads to to, and
// reports whether it did.
func (b *bulk) sendLocked(o offer.Offer, i int, to peer.ID, anyPeer bool) bool {
	size := b.cfg.Batch
	if r := b.cfg.PeerRate; !r.IsZero() {
		ch, _ := o.Channel(i)
		size = batchSize(size, MaxAutoBatch, float64(r.PerSecond)/float64(r.Cost), ch.Limit, ch.RTT)
	}
	if b.tally.peer(to).streak >= suspectStreak {
		size = 1 // a probe: little is held up if it fails too
	}
	hashes := b.front.takeSized(size, to, anyPeer)
	if len(hashes) == 0 {
		return false
	}
	if !b.requestLocked(o, i, to, hashes) {
		b.sendFailedLocked(hashes, to)
		b.refusedSends++
		return false
	}
	return true
}

// requestLocked sends a request for hashes on the i-th channel of o, which
// leads to to, through the Hedger with the timeout policy's deadlines for
// to, and reports whether the host took it.
func (b *bulk) requestLocked(o offer.Offer, i int, to peer.ID, hashes []ledger.Hash) bool {
	soft, hard := b.timing.Deadlines(to)
	r := &request{b: b, to: to, hashes: hashes, sentAt: b.cfg.Clock.Now()}
	id, err := b.hedger.Send(o, i, offer.Request{
		Message:  ledger.GetObjects{Hashes: hashes},
		Receiver: r,
		Soft:     soft,
		Timeout:  hard,
		Expect:   objectsType, // the scheduler refuses anything else, and the request waits on
	})
	if err != nil {
		return false
	}
	r.id = id
	b.inFlight[id] = r
	b.tally.sent(to)
	b.tally.hashes += len(hashes)
	b.tally.batches++
	return true
}

// OnResponse checks the first answer to come, from the request's peer or
// its hedge's, and applies it; the other request, withdrawn by the Hedger,
// ends here too. The answer is a ledger.Objects: the request declared it
// (objectsType), so the scheduler passes nothing else. The hashing happens
// before the lock is taken. Implements receiver.Receiver.
func (r *request) OnResponse(_ peer.RequestID, from peer.ID, response any) {
	b := r.b
	now := b.cfg.Clock.Now()
	results := examineObjects(r.hashes, response.(ledger.Objects), make([]itemResult, 0, len(r.hashes)))
	reuse(b.cfg.Base, results)
	b.waitToApply() // outside the lock: a store far behind slows the answers
	b.mu.Lock()
	if b.finished {
		b.mu.Unlock()
		return
	}
	delete(b.inFlight, r.id)
	sentAt := r.endOtherLocked(from)
	b.answeredLocked(r.hashes, from, results, true, now.Sub(sentAt), now)
	b.wakeLocked()
	useless := b.takeDisconnectsLocked()
	b.mu.Unlock()
	// Not under the lock: the host's Disconnect fails the peer's requests,
	// whose callbacks take it.
	b.disconnect(useless)
}

// OnFailure puts the request's hashes back, to be asked again, of another
// peer if one can take them: the request failed, and so did its hedge if
// one went (from is the peer that failed last). Implements
// receiver.Receiver.
func (r *request) OnFailure(_ peer.RequestID, from peer.ID, reason receiver.Reason) {
	b := r.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	delete(b.inFlight, r.id)
	r.endOtherLocked(from)
	switch reason {
	case receiver.Timeout:
		b.failedLocked(r.hashes, from, failTimeout)
	case receiver.Disconnected:
		b.failedLocked(r.hashes, from, failDisconnected)
	case receiver.Refused:
		b.failedLocked(r.hashes, from, failRefused)
	default: // Shutdown: the scheduler stopped under the fetch
		b.tally.ended(from)
		b.failLocked(fmt.Errorf("%w while requests were in flight", scheduler.ErrStopped))
		return
	}
	b.wakeLocked()
}

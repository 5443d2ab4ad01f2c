package hedge

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Scheduler is what a Hedger needs of the scheduler that carries its
// requests: *scheduler.Scheduler implements it.
type Scheduler interface {
	ScheduleWith(snd offer.Sender, priority int, opts offer.Options) (offer.Ticket, error)
	WithdrawSender(t offer.Ticket) bool
	WithdrawReceiver(id peer.RequestID) bool
}

// Options are a Hedger's terms for the hedges it sends. The zero Options
// send hedges at priority 0, in no class.
type Options struct {
	// Priority is the priority at which a hedge waits in the scheduler's
	// queue for a channel of another peer.
	Priority int
	// Sender holds the class, the message size and the wants of the
	// hedges' senders, as for the scheduler's ScheduleWith; each hedge
	// adds the first request's peer to Avoid. A hedge the scheduler will not
	// queue (a class it does not know, a size its byte budget refuses, too
	// many senders waiting, a stop) is not sent, its token is refunded,
	// and Stats counts it in Unqueued.
	Sender offer.Options
}

// ErrNilScheduler is returned by NewHedger without a scheduler.
var ErrNilScheduler = errors.New("hedge: scheduler is nil")

// Hedger sends requests that are hedged when they are slow: at a request's
// soft deadline it asks a different peer for the same message, through the
// scheduler, and the first answer wins (see the package documentation).
//
// A Hedger is safe for concurrent use. Its methods may be called from any
// goroutine and from inside any callback, a scheduler's or a Hedger's. It
// guards its own state with a mutex that it never holds while it calls the
// scheduler or user code (a receiver's method, a host's send), so it adds
// no lock to the order of its caller's: a sender may call Request holding
// its own lock, and its receivers may take that lock again.
//
// The zero value is not usable; build one with NewHedger.
type Hedger struct {
	sched Scheduler
	opts  Options

	lastID atomic.Uint64 // the last CallID issued

	mu sync.Mutex
	// The following fields are guarded by mu.
	budget  *Budget
	calls   map[CallID]*call // live calls
	waiting int              // hedges in state waiting
	stats   Stats
}

// NewHedger returns a Hedger that sends through s and spends b on its
// hedges. The Hedger owns b from then on: it records every request it
// sends in b and asks b before every hedge, under its own lock, so nothing
// else may use b (Stats reports its tokens). A nil b means a Budget of the
// default config: 5% of the requests, after a burst of 10. It fails with
// ErrNilScheduler if s is nil.
func NewHedger(s Scheduler, b *Budget, o Options) (*Hedger, error) {
	if s == nil {
		return nil, ErrNilScheduler
	}
	if b == nil {
		var err error
		if b, err = NewBudget(BudgetConfig{}); err != nil {
			panic(fmt.Sprintf("hedge: the default budget is refused: %v", err)) // cannot happen
		}
	}
	return &Hedger{sched: s, opts: o, budget: b, calls: make(map[CallID]*call)}, nil
}

// CallID names one call made through a Hedger's Send: its first request
// and its hedge together. The Hedger issues them from 1 up, and never
// issues one twice, so a CallID names its call, and nothing else, for
// the Hedger's whole life: after the call ends, Hedge and Withdraw given
// its CallID return false. It is not a request ID: the scheduler reuses
// request IDs once their requests end (with Config.RequestIDs, within a
// narrow range), while a call may outlive its first request (it then
// waits on its hedge).
type CallID uint64

// Request sends message on the i-th channel of o with deadlines soft and
// hard: it is Send(o, i, offer.Request{Message: message, Receiver: r, Soft:
// soft, Timeout: hard}).
func (h *Hedger) Request(o offer.Offer, i int, message any, r receiver.Receiver, soft, hard time.Duration) (CallID, error) {
	return h.Send(o, i, offer.Request{Message: message, Receiver: r, Soft: soft, Timeout: hard})
}

// Send sends req on the i-th channel of o, as o.Send does, and hedges it
// if it is slow: at its soft deadline, if the budget allows,
// a hedge waits in the scheduler's queue for a channel of any other peer
// and sends the same message there with the same hard deadline and
// expected response type (req.Expect), from its own send.
// The first answer wins: r gets it, and the other request is withdrawn. If
// one request fails while the other is live, r waits for the other; if
// both fail, r is told the last failure. However the two end, r gets
// exactly one call, OnResponse or OnFailure, unless Withdraw takes it away
// first; and it gets it with the call's CallID, the one Send returned, as
// its request ID (peer.RequestID(id)), whichever request the answer came
// to. from is the peer that answered, or whose request failed last.
//
// A hedge is sent at most once per request, and never to the first
// request's peer (it is scheduled avoiding it): while only that peer has
// open channels, the hedge waits, and it is withdrawn (its token refunded)
// when the first request ends. A hedge whose every send the host refuses
// waits too, parked, until then.
// If r is a Receiver, it decides whether each slow request is hedged at
// once and hears of every hedge sent.
//
// A soft deadline (req.Soft) of 0, or one at or past the hard one
// (req.Timeout), means none: the request is sent with its hard deadline
// alone and never hedged. Every request sent earns the budget its share of
// a hedge. On error nothing was sent and req.Receiver is never called; the
// errors are o.Send's, with receiver.ErrNilReceiver for a nil receiver and
// receiver.ErrBadTimeout for a negative soft deadline.
//
// Like every send through an offer, Send must be called while the offer is
// live: from the sender's OnOffer, or a goroutine OnOffer waits for.
func (h *Hedger) Send(o offer.Offer, i int, req offer.Request) (CallID, error) {
	r := req.Receiver
	if r == nil {
		return 0, receiver.ErrNilReceiver
	}
	if req.Soft < 0 {
		return 0, fmt.Errorf("%w: soft deadline %v", receiver.ErrBadTimeout, req.Soft)
	}
	if req.Soft >= req.Timeout {
		req.Soft = 0
	}
	ch, _ := o.Channel(i) // if there is no such channel, the send says why
	c := &call{h: h, id: CallID(h.lastID.Add(1)), r: r, message: req.Message, hard: req.Timeout, expect: req.Expect, origin: ch.Peer}
	c.first.c, c.second.c = c, c
	c.first.live = true // before the send publishes c to the scheduler
	req.Receiver = &c.first
	id, err := o.Send(i, req)
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		c.first.live = false
		return 0, err // the CallID is never seen: none of r's methods is called
	}
	c.first.id = id
	if !c.done {
		h.calls[c.id] = c
	}
	h.budget.Sent()
	h.stats.Requests++
	return c.id, nil
}

// Hedge hedges call id now, if it is one of the Hedger's, is still
// live, has passed its soft deadline, has not been hedged, and the budget
// allows, and reports whether it did: whether a hedge now waits for a
// channel of another peer. It is for a Receiver that declined to hedge a
// slow request at once (WantHedge) and wants it hedged later.
//
// Called from outside every callback with a scheduler that runs its
// callbacks inline, Hedge may run callbacks, the hedge's offer among them,
// before it returns, as the scheduler's Schedule may.
func (h *Hedger) Hedge(id CallID) bool {
	h.mu.Lock()
	c := h.calls[id]
	h.mu.Unlock()
	if c == nil {
		return false
	}
	return c.hedge()
}

// Withdraw takes r away from call id, as the scheduler's
// WithdrawReceiver does for a request: if it returns true, neither r's
// OnResponse nor its OnFailure will be called for the call, its requests
// (the first, and its hedge if one was sent) are withdrawn, and a hedge
// still waiting for a channel leaves the queue, its token refunded. The
// requests keep their channels until their responses or deadlines come.
// It returns false if id is not a live call of the Hedger's: r's one call
// has been made, or is about to be, or the call was withdrawn already. It
// never touches another call, whatever request IDs the scheduler has
// reused since the call began.
//
// A Receiver's WantHedge or OnHedge that another goroutine has already
// begun when Withdraw returns may still finish (as the scheduler's OnSlow
// may): a withdrawal cannot wait for callbacks, since it may be made from
// one.
func (h *Hedger) Withdraw(id CallID) bool {
	h.mu.Lock()
	c := h.calls[id]
	if c == nil || c.done {
		h.mu.Unlock()
		return false
	}
	c.endAndUnlock()
	return true
}

// Stats returns the Hedger's counters and the budget's tokens, read at
// one moment.
func (h *Hedger) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.stats
	st.Live = len(h.calls)
	st.Waiting = h.waiting
	st.Tokens = h.budget.Tokens()
	return st
}

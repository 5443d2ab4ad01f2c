// Package scheduler schedules a node's outbound traffic to its connected
// peers. Components hand it senders (waiting for open channels) and, with each
// request they send, a receiver (waiting for the response); the scheduler
// picks channels, assigns request IDs, routes responses, enforces timeouts,
// reacts to disconnects, and keeps the peers' channels shared fairly.
//
// # Concurrency
//
// A Scheduler is safe for concurrent use, and every method may be called from
// inside any callback (a sender's, a receiver's, or the host's Peer.Send).
// Callbacks never run while the scheduler holds a lock. They run one at a
// time: whichever goroutine finds callbacks waiting and nobody running them
// runs them all, including those that the callbacks themselves cause, before
// its call returns. So a call made from inside a callback returns at once and
// its effect (and any callbacks it causes) happens before the outermost call
// returns; a call made while another goroutine is running callbacks may
// return before the callbacks it caused have run (Stop is the exception: see
// its documentation).
//
// # Locks
//
// Two locks guard the state, and are always taken in this order: the offers
// lock (the peers' channels, the sender queue, the open offer) before the
// requests lock (the request table and the deadlines). A third, leaf lock
// guards the queue of callbacks to run. Build with the tag "lockorder" to have
// every acquisition checked.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/internal/lockorder"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Defaults for the caps in Config.
const (
	DefaultMaxSenders  = 1 << 20
	DefaultMaxRequests = 1 << 22
	// MaxRequestsLimit is the largest MaxRequests accepted: request IDs keep
	// a slot number in 32 bits, and notifications need slots too.
	MaxRequestsLimit = 1<<31 - 2
)

// Config configures a Scheduler. The zero Config is valid and uses the real
// clock, no logging, and the default caps.
type Config struct {
	// Clock is the source of all time. Nil means the real clock.
	Clock clock.Clock
	// Logger receives reports of recovered panics and other anomalies. Nil
	// means silence.
	Logger *slog.Logger
	// MaxSenders caps the number of waiting senders; Schedule beyond it fails
	// with ErrTooManySenders. 0 means DefaultMaxSenders.
	MaxSenders int
	// MaxRequests caps the number of requests in flight; a send beyond it
	// fails with ErrTooManyRequests. 0 means DefaultMaxRequests.
	MaxRequests int
	// MaxOfferChannels caps how many channels one offer lists (N). 0 means
	// every open channel.
	MaxOfferChannels int
	// RequestIDs, if not zero, is the range request IDs are drawn from, for
	// a host whose wire field is narrower than 64 bits (see
	// receiver.IDRange; the cursor goes round it in order, never issuing an
	// outstanding ID). MaxRequests must not exceed its size; 0 then means
	// the smaller of DefaultMaxRequests and the size.
	RequestIDs receiver.IDRange
}

// Scheduler is the message scheduler. Create one with New; the zero value is
// not usable.
type Scheduler struct {
	clock       clock.Clock
	realClock   bool // clock is the real clock: now reads time directly
	log         *slog.Logger
	epoch       time.Time
	maxSenders  int
	maxRequests int
	maxOffer    int

	// stopped mirrors the field of the same name under the locks, for
	// checks that must not take them.
	stoppedFlag atomic.Bool
	panics      atomic.Uint64

	offersMu lockorder.Mutex
	// The following fields are guarded by offersMu.
	pool           peer.Pool
	queue          offer.Queue
	book           offer.Book
	choices        []peer.Choice // scratch for building offers
	offerOpenings  uint64        // pool openings when the open offer was made
	offering       offer.Ticket  // the sender whose OnOffer is about to run or running; 0 if none
	offerClosed    sync.Cond     // signalled when offering is cleared
	discardOnClose offer.Sender  // the offered sender, if Stop came during its offer
	notified       uint64
	sendErrors     uint64
	stopped        bool // also guarded by requestsMu: set while holding both

	requestsMu lockorder.Mutex
	// The following fields are guarded by requestsMu.
	table      receiver.Table // every request and notification, with its deadline
	timer      *clock.Timer
	timerArmed bool
	timerAt    time.Duration
	finished   []receiver.Finished // scratch for disconnects
	counts     requestCounts

	callbacksMu lockorder.Mutex
	// The following fields are guarded by callbacksMu.
	pending        callbackQueue
	draining       bool
	dispatchWanted bool
	timerBusy      int
	idle           sync.Cond // signalled when draining ends or timerBusy drops
}

type requestCounts struct {
	sent, succeeded, timedOut, disconnected, shutdown uint64
	withdrawnEnded                                    uint64
	late, unknown, wrongPeer, duplicate               uint64
}

// Lock ranks: offers before requests, and the callback queue last.
const (
	rankOffers    lockorder.Rank = 10
	rankRequests  lockorder.Rank = 20
	rankCallbacks lockorder.Rank = 30
)

// New returns a running Scheduler. It fails with ErrBadConfig for negative
// caps, a MaxRequests above MaxRequestsLimit, or a bad RequestIDs range or
// one smaller than MaxRequests.
func New(cfg Config) (*Scheduler, error) {
	maxRequests, idErr := requestIDConfig(cfg)
	switch {
	case idErr != nil:
		return nil, idErr
	case cfg.MaxSenders < 0, cfg.MaxRequests < 0, cfg.MaxOfferChannels < 0:
		return nil, fmt.Errorf("%w: caps must not be negative", ErrBadConfig)
	case cfg.MaxRequests > MaxRequestsLimit:
		return nil, fmt.Errorf("%w: MaxRequests above %d", ErrBadConfig, MaxRequestsLimit)
	}
	s := &Scheduler{
		clock:       cfg.Clock,
		log:         cfg.Logger,
		maxSenders:  cfg.MaxSenders,
		maxRequests: maxRequests,
		maxOffer:    cfg.MaxOfferChannels,
	}
	if s.clock == nil {
		s.clock, s.realClock = clock.New(), true
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxSenders == 0 {
		s.maxSenders = DefaultMaxSenders
	}
	if s.maxRequests == 0 {
		s.maxRequests = DefaultMaxRequests
	}
	s.table.SetIDRange(cfg.RequestIDs)
	s.epoch = s.clock.Now()
	s.offersMu.Init("offers", rankOffers)
	s.requestsMu.Init("requests", rankRequests)
	s.callbacksMu.Init("callbacks", rankCallbacks)
	s.idle.L = &s.callbacksMu
	s.offerClosed.L = &s.offersMu
	return s, nil
}

// now returns the time since the scheduler's epoch, the unit of every
// deadline it keeps.
//
// It is read twice in every request's life. With the real clock it calls
// time.Since itself: the Clock interface's two extra calls cost about a
// tenth of the clock read they wrap.
func (s *Scheduler) now() time.Duration {
	if s.realClock {
		return time.Since(s.epoch)
	}
	return s.clock.Since(s.epoch)
}

// Connect adds a peer with the given number of channels, all open, and offers
// them to waiting senders. It fails, changing nothing, with ErrNilPeer,
// ErrBadChannels, ErrAlreadyConnected (a peer with the same ID is connected)
// or ErrStopped.
func (s *Scheduler) Connect(p peer.Peer, channels int) error {
	if p == nil {
		return ErrNilPeer
	}
	id := p.ID() // host code: ask before taking any lock
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return ErrStopped
	}
	ref, err := s.pool.Connect(p, id, channels)
	if err != nil {
		s.offersMu.Unlock()
		return fmt.Errorf("connect %q: %w", id, err)
	}
	s.requestsMu.Lock()
	s.table.Register(ref, id)
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.wantOffers()
	return nil
}

// Disconnect removes the peer named id. Its pending requests fail at once
// with reason Disconnected, at a cost proportional to their number; its
// channels are never offered again. It fails with ErrUnknownPeer or
// ErrStopped.
func (s *Scheduler) Disconnect(id peer.ID) error {
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return ErrStopped
	}
	ref, err := s.pool.Disconnect(id)
	if err != nil {
		s.offersMu.Unlock()
		return fmt.Errorf("disconnect %q: %w", id, err)
	}
	s.requestsMu.Lock()
	s.finished = s.table.FailPeer(ref, s.finished[:0])
	s.callbacksMu.Lock()
	for i := range s.finished {
		f := &s.finished[i]
		s.countEndLocked(f)
		s.pending.pushFinished(f)
		*f = receiver.Finished{}
	}
	s.callbacksMu.Unlock()
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.run()
	return nil
}

// Schedule puts snd in the queue of waiting senders, behind those of the same
// or higher priority and ahead of those of lower priority, and returns a
// ticket to withdraw it with. snd may be offered channels before Schedule
// returns. It fails, changing nothing, with ErrNilSender, ErrTooManySenders or
// ErrStopped.
func (s *Scheduler) Schedule(snd offer.Sender, priority int) (offer.Ticket, error) {
	if snd == nil {
		return 0, ErrNilSender
	}
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return 0, ErrStopped
	}
	if s.queue.Len() >= s.maxSenders {
		s.offersMu.Unlock()
		return 0, ErrTooManySenders
	}
	t := s.queue.Push(snd, priority)
	s.offersMu.Unlock()
	s.wantOffers()
	return t, nil
}

// WithdrawSender takes the sender named t out of the queue. If it returns
// true, none of the sender's callbacks will be called after it returns. It
// returns false if the sender is no longer waiting: it sent, was discarded,
// or was withdrawn. A sender that has sent during the offer it is in the
// middle of has left by that send, so withdrawing it then returns false and
// leaves the offer open.
//
// If the sender is being offered channels when it is withdrawn, its offer
// expires at once. Called from outside any callback, WithdrawSender then
// waits for that OnOffer call to return (it may already have been handed
// its offer), so that no callback of the sender runs after the withdrawal.
// Called from inside a callback, it cannot wait for the callback that called
// it, and returns at once.
func (s *Scheduler) WithdrawSender(t offer.Ticket) bool {
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	live, inOffer := s.book.Live()
	inOffer = inOffer && live == t
	if inOffer && s.book.Sent() > 0 {
		return false // closeOfferLocked takes it out of the queue when the offer closes
	}
	if _, ok := s.queue.Remove(t); !ok {
		return false
	}
	if inOffer {
		s.book.Close()
	}
	if s.offering == t && !insideCallback() {
		for s.offering == t {
			s.offerClosed.Wait()
		}
	}
	return true
}

// WithdrawReceiver takes the receiver away from request id. If it returns
// true, none of the receiver's methods will be called for id. The request
// keeps its channel closed until its response or deadline comes. It returns
// false if the request has already ended (its callback has run or is about
// to) or was already withdrawn.
func (s *Scheduler) WithdrawReceiver(id receiver.RequestID) bool {
	s.requestsMu.Lock()
	defer s.requestsMu.Unlock()
	return s.table.Withdraw(id)
}

// Deliver hands the scheduler a response that the peer named from sent for
// request id. The response is accepted only from the peer the request was
// sent to, only once, and only before the request's deadline; then the
// request's receiver gets it and the channel reopens. Otherwise it is dropped,
// counted, and Deliver returns why: ErrUnknownRequest, ErrWrongPeer,
// ErrDuplicateResponse, ErrLateResponse, or ErrStopped.
func (s *Scheduler) Deliver(from peer.ID, id receiver.RequestID, response any) error {
	// Both locks at once: the request ends (requests) and its channel
	// reopens (offers) in one step. This is the hottest path there is, and
	// taking each lock once is cheaper than handing the channel over in a
	// second round trip.
	s.offersMu.Lock()
	s.requestsMu.Lock()
	if s.stopped {
		s.requestsMu.Unlock()
		s.offersMu.Unlock()
		return ErrStopped
	}
	now := s.now()
	// Deadlines that have passed are enforced first, so a response that
	// comes after its deadline is late even if the timer has not fired yet.
	reopened := s.expireDueLocked(now)
	f, ended, err := s.table.Respond(id, from, response)
	if err != nil {
		s.countDroppedLocked(err)
		s.requestsMu.Unlock()
		s.offersMu.Unlock()
		s.logDropped(from, id, err)
		s.afterReopening(reopened)
		return err
	}
	if ended {
		s.countEndLocked(&f)
		s.pool.ObserveRTT(f.Peer, now-f.SentAt)
		reopened = s.pool.Reopen(f.Peer) || reopened
	}
	// One acquisition of the callback queue both queues the receiver's
	// call and runs the drainer; the other locks go first, as the drainer
	// needs them free.
	s.callbacksMu.Lock()
	if ended {
		s.pending.pushFinished(&f)
	}
	s.dispatchWanted = s.dispatchWanted || reopened
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.runLocked()
	s.callbacksMu.Unlock()
	return nil
}

// afterReopening runs the callbacks and, if a channel reopened, the offers
// that follow a step.
func (s *Scheduler) afterReopening(reopened bool) {
	if reopened {
		s.wantOffers()
		return
	}
	s.run()
}

// reopenChannel reopens one channel of ref's peer (unless the peer has gone)
// and runs the offers and callbacks that follow.
func (s *Scheduler) reopenChannel(ref peer.Ref) {
	s.offersMu.Lock()
	reopened := s.pool.Reopen(ref)
	s.offersMu.Unlock()
	s.afterReopening(reopened)
}

// countEndLocked counts how a request ended. Caller holds requestsMu.
func (s *Scheduler) countEndLocked(f *receiver.Finished) {
	switch {
	case f.Receiver == nil:
		s.counts.withdrawnEnded++
	case f.Answered():
		s.counts.succeeded++
	case f.Reason == receiver.Timeout:
		s.counts.timedOut++
	case f.Reason == receiver.Disconnected:
		s.counts.disconnected++
	case f.Reason == receiver.Shutdown:
		s.counts.shutdown++
	}
}

// logDropped reports a response that Deliver dropped. An unknown ID or the
// wrong peer points at a misbehaving host or peer and is a warning; late and
// duplicate responses happen in healthy networks and are debug records. The
// level is checked first so that a silent logger costs nothing.
func (s *Scheduler) logDropped(from peer.ID, id receiver.RequestID, err error) {
	level := slog.LevelDebug
	if errors.Is(err, ErrUnknownRequest) || errors.Is(err, ErrWrongPeer) {
		level = slog.LevelWarn
	}
	if ctx := context.Background(); s.log.Enabled(ctx, level) {
		s.log.Log(ctx, level, "peersched: dropped a response", "from", string(from), "request", uint64(id), "reason", err.Error())
	}
}

// countDroppedLocked counts a dropped response. Caller holds requestsMu.
func (s *Scheduler) countDroppedLocked(err error) {
	switch {
	case errors.Is(err, ErrLateResponse):
		s.counts.late++
	case errors.Is(err, ErrWrongPeer):
		s.counts.wrongPeer++
	case errors.Is(err, ErrDuplicateResponse):
		s.counts.duplicate++
	default:
		s.counts.unknown++
	}
}

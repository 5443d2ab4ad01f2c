package scheduler

import (
	"runtime"
	"runtime/debug"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// User callbacks are never run under a lock. Each step that decides one
// queues it (under callbacksMu, a leaf lock) and then calls run, which starts
// the drainer unless one is already running. The drainer runs queued
// callbacks and makes offers, one at a time, until there is nothing left to
// do, then stops; a callback that calls back into the scheduler only queues
// more work for the same drainer, so nothing deadlocks and nothing is lost.
// Because the queue and the drainer flag share one lock, work queued just as
// the drainer finishes is seen by its last check or by the caller that queued
// it.
//
// The drainer normally runs on a goroutine of its own, started when work
// arrives and ended a moment after there is none (it lingers a few
// microseconds for more, see lingerLocked), so a host's goroutine that calls
// Deliver or Disconnect never runs other components' code, and one that
// delivers responses back to back hands them over in batches: only the
// first of a batch starts the drainer, or hands the batch to the one
// lingering. With
// Config.InlineCallbacks it runs on the goroutine that found it idle instead.
//
// No scheduler method waits for user code (Shutdown and Call aside, which
// say so), so the scheduler never needs to know whether a call comes from
// inside a callback, or on whose behalf: a call from anywhere only changes
// the state and queues what follows. Nothing reads goroutine stacks to
// find out; Call, which would wait for itself inside a callback, says so
// in its documentation and ends with its context.

type callbackKind uint8

const (
	callOffer callbackKind = iota
	callResponse
	callFailure
	callDiscard
	callReport // a panic in a peer's Limiter, recovered under the locks, to log outside them
	callSlow   // a request passed its soft deadline
)

func (k callbackKind) String() string {
	switch k {
	case callOffer:
		return "Sender.OnOffer"
	case callResponse:
		return "Receiver.OnResponse"
	case callFailure:
		return "Receiver.OnFailure"
	case callReport:
		return "limit.Limiter"
	case callSlow:
		return "Receiver.OnSlow"
	}
	return "Sender.OnDiscard"
}

type callback struct {
	kind     callbackKind
	reason   receiver.Reason
	id       peer.RequestID
	from     peer.ID
	receiver receiver.Receiver
	response any // for callReport, the *peerpool.LimiterPanic; for callSlow, the requests.Slow
	sender   offer.Sender
}

// callbackQueue is a FIFO that reuses its backing array, so queuing a
// callback does not allocate once the queue has reached its working size.
//
// Callbacks are written into their slot and cleared field by field: storing
// or zeroing a whole callback, a struct with pointers, in the heap goes
// through typedmemmove, which cost more than the rest of queuing it. Every
// slot between len(items) and cap(items) is zero.
type callbackQueue struct {
	items []callback
	head  int
}

// slot appends a zero callback and returns it to be filled in.
func (q *callbackQueue) slot() *callback {
	if n := len(q.items); n < cap(q.items) {
		q.items = q.items[:n+1]
	} else {
		q.items = append(q.items, callback{})
	}
	return &q.items[len(q.items)-1]
}

func (q *callbackQueue) push(c callback) { *q.slot() = c }

// pushFinished queues the receiver call for a finished request, if it still
// has a receiver (a withdrawn request has none).
func (q *callbackQueue) pushFinished(f *requests.Finished) {
	if f.Receiver == nil {
		return
	}
	c := q.slot()
	c.kind, c.reason, c.id, c.from, c.receiver = callFailure, f.Reason, f.ID, f.PeerID, f.Receiver
	if f.Answered() {
		c.kind, c.response = callResponse, f.Response
	}
}

// pushSlow queues the OnSlow call for a request past its soft deadline.
// The request is still live, so the call is checked again when its turn
// comes (see invoke): it is not made once the request has ended or been
// withdrawn. It does not count as owed: a live request counts already.
func (q *callbackQueue) pushSlow(slow requests.Slow) {
	c := q.slot()
	c.kind, c.id, c.from, c.receiver, c.response = callSlow, slow.ID, slow.PeerID, slow.Receiver, slow
}

func (q *callbackQueue) pop() (callback, bool) {
	if q.head == len(q.items) {
		return callback{}, false
	}
	slot := &q.items[q.head]
	c := *slot
	// Let the response and the receiver be collected, and keep the slot
	// zero for its next use.
	slot.kind, slot.reason, slot.id = 0, 0, 0
	slot.from, slot.receiver, slot.response, slot.sender = "", nil, nil, nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	} else if q.head > 1024 && q.head*2 > len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return c, true
}

func (q *callbackQueue) len() int { return len(q.items) - q.head }

// wantOffers notes that an offer may now be possible and runs the drainer,
// taking callbacksMu once for both steps. A caller that holds offersMu
// when it asks uses unlockAndWantOffers instead.
func (s *Scheduler) wantOffers() {
	s.callbacksMu.Lock()
	s.dispatchWanted = true
	s.runLocked()
	s.callbacksMu.Unlock()
}

// unlockAndWantOffers releases offersMu and asks for offers, unless a pass
// of makeOffers is due already (offersDue): that pass begins under
// offersMu, so it sees whatever the caller changed under it (a sender
// queued, a peer connected). A receiver that schedules its next sender,
// the commonest call there is, then takes no callbacksMu. Caller holds
// offersMu.
func (s *Scheduler) unlockAndWantOffers() {
	due := s.offersDue
	s.offersMu.Unlock()
	if !due {
		s.wantOffers()
	}
}

// run starts the drainer if there is work for it and none is running.
func (s *Scheduler) run() {
	s.callbacksMu.Lock()
	s.runLocked()
	s.callbacksMu.Unlock()
}

// runLocked starts the drainer if there is work and none is running: on its
// own goroutine, or, with inline callbacks, on this one before it returns.
// Caller holds callbacksMu, which it holds again on return.
//
// A drainer goroutine that has just run out of work lingers for a moment
// before it ends (see lingerLocked); work that comes meanwhile is handed to
// it with a flag, at no cost to the caller. Only when none lingers does the
// caller start one. Either way the drainer is woken once for everything
// queued until it next runs out of work: a call that finds it draining
// queues its callbacks behind the others and returns.
func (s *Scheduler) runLocked() {
	if s.draining || (s.pending.len() == 0 && !s.dispatchWanted) {
		return
	}
	s.draining = true
	if s.inline {
		s.drainLocked()
		return
	}
	if s.lingering {
		s.lingering = false
		s.handedOff.Store(true)
		return
	}
	s.drainers++
	go s.drainOnOwnGoroutine()
}

// lingerSpins bounds how long a drainer goroutine that ran out of work waits
// for more before it ends: this many yields of its processor, a few
// microseconds on an idle machine. A host whose read loop delivers
// responses back to back keeps one drainer busy; between two bursts, a
// drainer ends and the next burst starts another. BenchmarkHandOff measures
// both ways of handing it work.
const lingerSpins = 64

// drainOnOwnGoroutine is a drainer goroutine: it drains, lingers, and
// drains again while work comes, and is counted in drainers until it ends,
// even by runtime.Goexit in a callback (handOver then starts the next).
func (s *Scheduler) drainOnOwnGoroutine() {
	locked := false
	defer func() {
		if !locked {
			s.callbacksMu.Lock()
		}
		s.drainers--
		s.settleLocked()
		s.callbacksMu.Unlock()
	}()
	s.callbacksMu.Lock()
	for {
		s.drainLocked()
		if !s.lingerLocked() {
			break
		}
	}
	locked = true
}

// lingerLocked waits a moment, holding no lock, for work to be handed to
// the drainer goroutine that runs it, which has just run out of work, and
// reports whether some was (draining is then set for it). It waits not at
// all once the scheduler has stopped. Caller holds callbacksMu, which it
// holds again on return.
func (s *Scheduler) lingerLocked() bool {
	if s.stoppedFlag.Load() {
		return false
	}
	s.lingering = true
	s.callbacksMu.Unlock()
	for i := 0; i < lingerSpins && !s.handedOff.Load() && !s.stoppedFlag.Load(); i++ {
		runtime.Gosched()
	}
	s.callbacksMu.Lock()
	if s.handedOff.Load() {
		s.handedOff.Store(false)
		return true
	}
	s.lingering = false
	return false
}

// drainLocked is the drainer's loop: it runs queued callbacks, and makes one
// offer whenever none is queued, until neither is left. It is entered and
// left with callbacksMu held and draining set, and clears draining.
//
// The callbacks queued when it looks are taken in one batch and run with
// callbacksMu released once for all of them; those they queue, and those
// queued meanwhile by other goroutines, form the next batch.
//
// Offers come one at a time with the callback queue checked between them,
// so the callbacks waiting are never more than two per request in flight
// (its final call, see owed, and an OnSlow) plus one discard per sender and
// one report per Limiter panic.
func (s *Scheduler) drainLocked() {
	finished := false
	// started counts the receivers' calls of the batch that have started:
	// they leave owed together, once the batch has run (or its goroutine
	// has ended in one of them), one atomic operation a batch instead of
	// one a call. Nothing reads owed while a batch runs: offers, and the
	// sends through them, are made by this drainer between batches.
	var started int64
	defer func() {
		if !finished {
			s.owed.Add(-started)
			s.handOver()
		}
	}()
	for {
		if s.pending.len() > 0 {
			s.batch, s.pending = s.pending, s.batch
			s.callbacksMu.Unlock()
			for {
				c, ok := s.batch.pop()
				if !ok {
					break
				}
				if c.kind == callResponse || c.kind == callFailure {
					started++
				}
				s.invoke(&c)
			}
			if started > 0 {
				s.owed.Add(-started)
				started = 0
			}
			s.callbacksMu.Lock()
			continue
		}
		if s.dispatchWanted {
			s.dispatchWanted = false
			s.callbacksMu.Unlock()
			more := s.makeOffers()
			s.callbacksMu.Lock()
			s.dispatchWanted = s.dispatchWanted || more
			continue
		}
		break
	}
	s.draining = false
	s.settleLocked()
	finished = true
}

// handOver runs when a callback ended the drainer's goroutine with
// runtime.Goexit (t.FailNow does): no lock is held then, since user code runs
// with none. The goroutine cannot be kept, so a fresh drainer takes over the
// work that is left, on a goroutine of its own even with inline callbacks:
// first what was left of the batch, then what was queued since.
func (s *Scheduler) handOver() {
	s.callbacksMu.Lock()
	if s.batch.len() > 0 {
		for {
			c, ok := s.pending.pop()
			if !ok {
				break
			}
			s.batch.push(c)
		}
		s.batch, s.pending = s.pending, s.batch
	}
	s.draining = false
	if s.pending.len() > 0 || s.dispatchWanted {
		s.draining = true
		s.drainers++
		go s.drainOnOwnGoroutine()
	} else {
		s.settleLocked()
	}
	s.callbacksMu.Unlock()
}

func (s *Scheduler) invoke(c *callback) {
	returned := false
	defer func() {
		if !returned {
			s.userCodeDidNotReturn(c.kind.String(), recover())
		}
	}()
	switch c.kind {
	case callResponse:
		c.receiver.OnResponse(c.id, c.from, c.response)
	case callFailure:
		c.receiver.OnFailure(c.id, c.from, c.reason)
	case callDiscard:
		c.sender.OnDiscard()
	case callSlow:
		// The request may have ended, or been withdrawn, since the report
		// was queued; if not, the call starts now, and a withdrawal from
		// here on finds it started, as promise 11 allows.
		s.requestsMu.Lock()
		live := s.table.StillLive(c.response.(requests.Slow))
		s.requestsMu.Unlock()
		if live {
			c.receiver.(receiver.SlowReceiver).OnSlow(c.id, c.from)
		}
	case callReport:
		s.logLimiterPanic(c.response.(*peerpool.LimiterPanic))
	}
	returned = true
}

// callSender hands snd the offer named generation. If OnOffer panics or
// exits its goroutine, the offer still closes as it stands (a send made
// before counts). A Goexit that began in a host send made through this offer
// was reported there.
func (s *Scheduler) callSender(snd offer.Sender, generation uint64) {
	returned := false
	defer func() {
		if !returned {
			value := recover()
			if value == nil && s.goexitInSend.Load() == generation {
				return
			}
			s.userCodeDidNotReturn(callOffer.String(), value)
		}
	}()
	snd.OnOffer(newOffer((*carrier)(s), generation))
	returned = true
}

// userCodeDidNotReturn reports user code that panicked (value is what it
// panicked with, recovered by the caller's deferred function) or called
// runtime.Goexit (value is nil). A panic is stopped here; a Goexit goes on
// ending its goroutine, and the deferred functions above this one put the
// scheduler's state right. Either way the scheduler carries on, its state
// intact because no lock is held while user code runs.
func (s *Scheduler) userCodeDidNotReturn(where string, value any) {
	s.panics.Add(1)
	if value == nil {
		s.log.Error("peersched: user code called runtime.Goexit", "in", where, "stack", string(debug.Stack()))
		return
	}
	s.logPanic(where, value)
}

// logLimiterPanic reports a panic that a peer's Limiter raised, which the
// pool recovered, with the stack where it was raised.
func (s *Scheduler) logLimiterPanic(p *peerpool.LimiterPanic) {
	s.log.Error("peersched: recovered a panic in user code", "in", callReport.String(), "panic", p.Value, "stack", string(p.Stack))
}

func (s *Scheduler) logPanic(where string, value any) {
	s.log.Error("peersched: recovered a panic in user code", "in", where, "panic", value, "stack", string(debug.Stack()))
}

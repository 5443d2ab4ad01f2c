package scheduler

import (
	"runtime/debug"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// User callbacks are never run under a lock. Each step that decides one
// queues it (under callbacksMu, a leaf lock) and then calls run, which makes
// the calling goroutine the drainer unless another goroutine already is. The
// drainer runs queued callbacks and makes offers until there is nothing left
// to do; a callback that calls back into the scheduler only queues more work
// for the same drainer, so nothing deadlocks and nothing is lost. Because the
// queue and the drainer flag share one lock, work queued just as the drainer
// finishes is seen by its last check or by the caller that queued it.

type callbackKind uint8

const (
	callOffer callbackKind = iota
	callResponse
	callFailure
	callDiscard
)

func (k callbackKind) String() string {
	switch k {
	case callOffer:
		return "Sender.OnOffer"
	case callResponse:
		return "Receiver.OnResponse"
	case callFailure:
		return "Receiver.OnFailure"
	}
	return "Sender.OnDiscard"
}

type callback struct {
	kind     callbackKind
	reason   receiver.Reason
	id       receiver.RequestID
	from     peer.ID
	receiver receiver.Receiver
	response any
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
func (q *callbackQueue) pushFinished(f *receiver.Finished) {
	if f.Receiver == nil {
		return
	}
	c := q.slot()
	c.kind, c.reason, c.id, c.from, c.receiver = callFailure, f.Reason, f.ID, f.PeerID, f.Receiver
	if f.Answered() {
		c.kind, c.response = callResponse, f.Response
	}
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

// wantOffers notes that an offer may now be possible and runs the drainer.
// Every send and response comes through here, so it takes callbacksMu once
// for both steps.
func (s *Scheduler) wantOffers() {
	s.callbacksMu.Lock()
	s.dispatchWanted = true
	s.runLocked()
	s.callbacksMu.Unlock()
}

// run drains queued callbacks and offers unless another goroutine is
// already doing so, in which case that goroutine will see the new work.
func (s *Scheduler) run() {
	s.callbacksMu.Lock()
	s.runLocked()
	s.callbacksMu.Unlock()
}

// runLocked is run for a caller that holds callbacksMu, which it holds again
// on return.
func (s *Scheduler) runLocked() {
	if s.draining {
		return
	}
	s.draining = true
	s.drain()
	s.draining = false
	s.idle.Broadcast()
}

// drain is the drainer's loop; it is entered and left with callbacksMu held.
// Its name is looked for on the stack by insideCallback, so it must not be
// inlined.
//
//go:noinline
func (s *Scheduler) drain() {
	for {
		if c, ok := s.pending.pop(); ok {
			s.callbacksMu.Unlock()
			s.invoke(&c)
			s.callbacksMu.Lock()
			continue
		}
		if s.dispatchWanted {
			s.dispatchWanted = false
			s.callbacksMu.Unlock()
			s.makeOffers()
			s.callbacksMu.Lock()
			continue
		}
		return
	}
}

func (s *Scheduler) invoke(c *callback) {
	defer s.recoverCallback(c.kind)
	switch c.kind {
	case callResponse:
		c.receiver.OnResponse(c.id, c.from, c.response)
	case callFailure:
		c.receiver.OnFailure(c.id, c.from, c.reason)
	case callDiscard:
		c.sender.OnDiscard()
	}
}

// callSender hands snd its offer, recovering a panic: the offer then closes
// as it stands (a send made before the panic counts).
func (s *Scheduler) callSender(snd offer.Sender, o offer.Offer) {
	defer s.recoverCallback(callOffer)
	snd.OnOffer(o)
}

// recoverCallback is deferred around every user callback: a panic is counted
// and logged with its stack, and the scheduler carries on, its state intact
// because no lock is held while user code runs.
func (s *Scheduler) recoverCallback(kind callbackKind) {
	if r := recover(); r != nil {
		s.panics.Add(1)
		s.logPanic(kind.String(), r)
	}
}

func (s *Scheduler) logPanic(where string, value any) {
	s.log.Error("peersched: recovered a panic in user code", "in", where, "panic", value, "stack", string(debug.Stack()))
}

package scheduler

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// CallOptions are the terms of one Call beyond its priority and message.
// The zero CallOptions send on the best channel offered, expect any
// response, and take the request's deadline from the context.
type CallOptions struct {
	// Timeout is the request's deadline, measured from its send, as
	// offer.Request.Timeout. 0 means the time the context has left when
	// the request is sent (the time waiting for a channel is not
	// counted twice); then a context without a deadline is an error,
	// receiver.ErrBadTimeout. A negative Timeout is one too.
	Timeout time.Duration
	// Expect, if not nil, is the type the response must have, as
	// offer.Request.Expect: a response of another type is refused and the
	// call goes on waiting for the right one.
	Expect reflect.Type
	// Pick, if not nil, chooses the channel to send on: it is given each
	// offer the call's sender gets and returns the index of a listed
	// channel, or a negative index to wait for the next offer, keeping
	// the sender's place: it comes after the next channel opens. (Unlike
	// a sender that declines, the call's is not parked, so each waiting
	// call costs every opening a little; a call that wants certain peers
	// says so in Sender instead, and is offered only those.) An index past the offer's end fails the call
	// with offer.ErrNoSuchChannel. Pick runs as a sender's OnOffer does,
	// on the callback goroutine, and must not block. Nil means the first
	// channel listed: the best.
	Pick func(o offer.Offer) int
	// Sender are the terms the call's sender is scheduled with: its class
	// and declared size, as ScheduleWith takes them.
	Sender offer.Options
}

// Call sends message as one request and waits for its outcome: the common
// case of a sender that has one request to make and nothing to do until
// it is answered. It schedules a sender at priority (with opts.Sender, as
// ScheduleWith does), sends on the channel its first offer lists (or the
// one opts.Pick chooses), and returns the peer that answered and its
// response. Schedule and every other method stay non-blocking; Call is
// built on them and adds nothing they cannot do.
//
// The error says why there is no response, and nothing was changed unless
// it says so:
//
//   - The request failed: the error wraps its receiver.Reason (matched by
//     errors.Is with the reason: receiver.Timeout, which also matches
//     context.DeadlineExceeded, receiver.Disconnected or receiver.Refused),
//     and from is the peer it was sent to. A request ended by Stop
//     (receiver.Shutdown) matches ErrStopped as well.
//   - ctx ended first: the error is ctx.Err() itself, unwrapped, and the
//     call was withdrawn, so no outcome was lost. If the call was still
//     waiting for a channel its sender was withdrawn and nothing was sent;
//     if its request was in flight, from is its peer and the request's
//     receiver was withdrawn (Stats counts the request in WithdrawnEnded
//     when it ends): the request keeps its channel until its response or
//     its deadline comes, as WithdrawReceiver says. A send under way as
//     ctx ends is waited for (a host's Send does not block), and its
//     request withdrawn likewise. If the scheduler took the request's
//     answer (or its failure) before the withdrawal, ctx ending changes
//     nothing: Call returns that outcome, as below, once the call's
//     receiver has it, which may be after other callbacks have run.
//   - The scheduler stopped while the call waited for a channel:
//     ErrStopped.
//   - The scheduler refused the sender (Schedule's errors) or the send
//     (a send's errors through an offer, the host's send error among
//     them): that error, the sender gone. A channel whose peer left or
//     reached its limit after the offer was made is not an error: the
//     call waits for the next offer.
//   - receiver.ErrBadTimeout: opts.Timeout is negative, or 0 with no
//     deadline on ctx. ctx.Err(): ctx had ended before the call.
//
// Do not Call from inside a callback (a sender's, a receiver's, or the
// host's Peer.Send run from an offer), nor from a goroutine that a callback
// waits for: the call's own OnOffer and OnResponse run on the callback
// goroutine it would be holding, so it waits until ctx ends, and returns
// ctx.Err() having sent nothing, while every other callback of the
// scheduler waits too. Inside a callback, send through an offer instead.
// Call cannot refuse such a call up front: telling the callback goroutine
// from others would mean reading goroutine stacks, which the scheduler
// never does (see callbacks.go).
func (s *Scheduler) Call(ctx context.Context, priority int, message any, opts CallOptions) (from peer.ID, response any, err error) {
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	deadline, hasDeadline := ctx.Deadline()
	switch {
	case opts.Timeout < 0:
		return "", nil, fmt.Errorf("%w: Call with timeout %v", receiver.ErrBadTimeout, opts.Timeout)
	case opts.Timeout == 0 && !hasDeadline:
		return "", nil, fmt.Errorf("%w: Call needs CallOptions.Timeout or a deadline on its context", receiver.ErrBadTimeout)
	}
	c := &call{s: s, message: message, opts: opts, deadline: deadline, done: make(chan struct{})}
	t, err := s.ScheduleWith(c, priority, opts.Sender)
	if err != nil {
		return "", nil, err
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		if from, withdrawn := c.cancel(t); withdrawn {
			return from, nil, ctx.Err()
		}
		// The scheduler had taken the outcome before the withdrawal: it
		// is on its way to the call's receiver, and it stands.
		<-c.done
	}
	if c.quit {
		// OnOffer failed the call and left the sender waiting: it goes.
		s.WithdrawSender(t)
	}
	return c.from, c.response, c.err
}

// call is the sender and the receiver of one Call.
type call struct {
	s        *Scheduler
	message  any
	opts     CallOptions
	deadline time.Time     // ctx's, when opts.Timeout is 0
	done     chan struct{} // closed when the outcome below is set

	mu sync.Mutex
	// The following fields are guarded by mu.
	state     callState
	cancelled bool           // withdrawn after ctx ended: Call has returned ctx.Err()
	sent      chan struct{}  // closed when the host's send, begun in state callSending, has returned
	id        peer.RequestID // the request, once sent
	to        peer.ID        // its peer
	// The outcome, set once, before done is closed.
	from     peer.ID
	response any
	err      error
	quit     bool // the call failed in OnOffer, its sender still queued
}

type callState uint8

const (
	callWaiting  callState = iota // for a channel, in OnOffer too until the send begins
	callSending                   // the host's send is under way
	callInFlight                  // the request was sent
	callEnded                     // the outcome is set
)

// OnOffer sends the call's request on the chosen channel, once.
func (c *call) OnOffer(o offer.Offer) {
	c.mu.Lock()
	if c.state != callWaiting || c.cancelled {
		c.mu.Unlock()
		return // ended, or withdrawn: decline
	}
	// The call stays waiting while Pick runs: cancel withdraws its
	// sender then, and its sender's callbacks never overlap, so no
	// other OnOffer can begin meanwhile.
	c.mu.Unlock()

	i := 0
	if c.opts.Pick != nil {
		i = c.opts.Pick(o)
	}
	timeout := c.opts.Timeout
	if timeout == 0 {
		timeout = time.Until(c.deadline)
	}
	if i < 0 || timeout <= 0 { // Pick declined, or ctx is ending: Call hears of it
		c.s.waitForOpening()
		return
	}
	ch, _ := o.Channel(i)
	c.mu.Lock()
	if c.cancelled {
		c.mu.Unlock()
		return // withdrawn while Pick ran: send nothing
	}
	// From here until the send returns, cancel waits for it: only then
	// is it known whether a request exists, and whether its outcome is
	// already on its way.
	c.state, c.sent = callSending, make(chan struct{})
	c.mu.Unlock()
	returned := false
	defer func() {
		if !returned { // the host's send called runtime.Goexit: nothing was sent
			c.mu.Lock()
			c.state = callWaiting
			close(c.sent)
			c.mu.Unlock()
		}
	}()
	id, err := o.Send(i, offer.Request{Message: c.message, Receiver: c, Timeout: timeout, Expect: c.opts.Expect})
	returned = true

	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(c.sent)
	switch {
	case err == nil:
		c.state, c.id, c.to = callInFlight, id, ch.Peer
	case errors.Is(err, offer.ErrExpired), errors.Is(err, offer.ErrPeerGone), errors.Is(err, offer.ErrPeerAtLimit):
		// Withdrawn, or the channel went: the next offer, if any, will do.
		c.state = callWaiting
		c.s.waitForOpening()
	default:
		c.state = callWaiting
		c.quit = true
		c.endLocked("", nil, err)
	}
}

// OnDiscard ends the call: the scheduler stopped while it waited.
func (c *call) OnDiscard() { c.end("", nil, ErrStopped) }

// OnResponse ends the call with the response.
func (c *call) OnResponse(_ peer.RequestID, from peer.ID, response any) {
	c.end(from, response, nil)
}

// OnFailure ends the call with its request's failure.
func (c *call) OnFailure(_ peer.RequestID, from peer.ID, reason receiver.Reason) {
	if reason == receiver.Shutdown {
		c.end(from, nil, fmt.Errorf("%w: call to %q: %w", ErrStopped, from, reason))
		return
	}
	c.end(from, nil, fmt.Errorf("peersched: call to %q: %w", from, reason))
}

func (c *call) end(from peer.ID, response any, err error) {
	c.mu.Lock()
	c.endLocked(from, response, err)
	c.mu.Unlock()
}

// endLocked sets the call's outcome, unless it has one or was withdrawn
// (then nothing was sent, or its receiver was taken away, and only a
// discard can still come). Caller holds c.mu.
func (c *call) endLocked(from peer.ID, response any, err error) {
	if c.state == callEnded || c.cancelled {
		return
	}
	c.state, c.from, c.response, c.err = callEnded, from, response, err
	close(c.done)
}

// cancel withdraws the call, ticket t, after its context ended. withdrawn
// reports whether it did: then nothing of the call's will reach it any
// more, and from is the peer its request went to, if one was sent. False
// means the scheduler had taken the call's outcome first: it has been
// set, or its receiver's call is owed and will set it.
//
// A send under way is waited for (the host's Send does not block): until
// it returns, whether a request exists, and whether an answer that came
// during it was taken, is not known.
func (c *call) cancel(t offer.Ticket) (from peer.ID, withdrawn bool) {
	for {
		c.mu.Lock()
		switch c.state {
		case callEnded:
			c.mu.Unlock()
			return "", false
		case callSending:
			sent := c.sent
			c.mu.Unlock()
			<-sent
		case callInFlight:
			id, to := c.id, c.to
			c.mu.Unlock()
			// WithdrawReceiver decides, under the scheduler's lock, which
			// came first: false means the request has ended, and its
			// outcome is queued for the call's receiver.
			if !c.s.WithdrawReceiver(id) {
				return "", false
			}
			c.mu.Lock()
			c.cancelled = true
			c.mu.Unlock()
			return to, true
		default: // waiting: no send has begun, and none will
			c.cancelled = true
			c.mu.Unlock()
			// The sender goes (an offer running now expires). If it had
			// left already, it was discarded (Stop), which sent nothing.
			c.s.WithdrawSender(t)
			return "", true
		}
	}
}

// waitForOpening makes the open offer's end, if its sender sends nothing,
// wait for the next channel opening instead of parking the sender (see
// offerqueue.Queue.WaitForOpening). Called from inside OnOffer, for Call's
// sender, which has no ticket to Reoffer with there and must not wait
// parked until its context ends.
func (s *Scheduler) waitForOpening() {
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	if t, ok := s.book.Live(); ok {
		s.queue.WaitForOpening(t)
	}
}

// Package receiver holds the receiving side of a request: the Receiver a
// sender passes with each request, the reasons a request can fail, request
// IDs, and the Table that remembers every outstanding request.
package receiver

import (
	"context"
	"errors"
	"fmt"

	"github.com/peersched/peersched/peer"
)

// RequestID names one request for the lifetime of its scheduler. IDs are
// never zero, so a zero ID on the wire can mean "not a request".
type RequestID uint64

// Reason says why a request failed. A Reason is an error, so a receiver
// may pass it on as one (Scheduler.Call returns it); errors.Is matches it
// with the constant itself (errors.Is(err, receiver.Timeout)), and a
// Timeout also with context.DeadlineExceeded, the error Go code checks for
// a deadline that passed. Being a small integer, it costs no allocation to
// pass, to compare with == or to switch on, as receivers have always done.
type Reason uint8

// The reasons a receiver can be told a request failed.
const (
	// Timeout: no response came from the peer before the request's deadline.
	// A response arriving later is dropped and counted as late.
	Timeout Reason = iota + 1
	// Disconnected: the peer was disconnected while the request was pending.
	Disconnected
	// Shutdown: the scheduler was stopped while the request was pending.
	Shutdown
	// Refused: the peer answered that it would not serve the request (it is
	// overloaded or busy), and the host told the scheduler so
	// (Scheduler.Refuse). The peer did not serve it: the request may be
	// sent again, later or to another peer.
	Refused
)

func (r Reason) String() string {
	switch r {
	case Timeout:
		return "timeout"
	case Disconnected:
		return "disconnected"
	case Shutdown:
		return "shutdown"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Error returns the reason's name, as String does, so that a Reason
// prints the same whether it is formatted as an error or a value.
func (r Reason) Error() string { return r.String() }

// Is reports whether the reason matches target, for errors.Is: a Timeout
// matches context.DeadlineExceeded (a request's deadline is one), and no
// reason matches anything else but itself, which errors.Is checks before
// asking.
func (r Reason) Is(target error) bool {
	return r == Timeout && target == context.DeadlineExceeded
}

// Receiver waits for the response to one or more requests. The scheduler calls
// exactly one of its methods exactly once for each request it was given with,
// unless the request is withdrawn first. Receiver callbacks never run
// concurrently with each other and never while the scheduler holds a lock, so
// they may call any scheduler method; they should be short, because while one
// runs no other receiver callback can.
type Receiver interface {
	// OnResponse is called with the response to request id, which came from
	// the peer the request was sent to, before its deadline.
	OnResponse(id RequestID, from peer.ID, response any)
	// OnFailure is called when request id, sent to peer from, failed.
	// reason says why; it is an error too, for a receiver that passes it
	// on (see Reason).
	OnFailure(id RequestID, from peer.ID, reason Reason)
}

// SlowReceiver is a Receiver that wants to know when a request passes its
// soft deadline (a request sent with one: offer.Offer.RequestSoft). The
// scheduler calls OnSlow at most once per request, after the soft deadline
// and before the request's one final call (OnResponse or OnFailure), which
// still comes: the request stays live, holding its channel, until its
// response, its hard deadline, its peer's disconnect or a stop. A receiver
// typically asks another peer meanwhile (hedging), and takes whichever
// answer comes first. OnSlow runs like the other receiver callbacks (never
// concurrently with them, never under a scheduler lock), and is not made
// once the request is withdrawn or has ended. Receivers that are not
// SlowReceivers are not told.
type SlowReceiver interface {
	Receiver
	// OnSlow is called when request id, sent to peer from, passed its soft
	// deadline without an answer.
	OnSlow(id RequestID, from peer.ID)
}

// Funcs adapts a pair of functions to a Receiver. A nil field ignores that
// outcome.
type Funcs struct {
	Response func(id RequestID, from peer.ID, response any)
	Failure  func(id RequestID, from peer.ID, reason Reason)
}

// OnResponse calls f.Response if it is set.
func (f Funcs) OnResponse(id RequestID, from peer.ID, response any) {
	if f.Response != nil {
		f.Response(id, from, response)
	}
}

// OnFailure calls f.Failure if it is set.
func (f Funcs) OnFailure(id RequestID, from peer.ID, reason Reason) {
	if f.Failure != nil {
		f.Failure(id, from, reason)
	}
}

// Errors about requests and responses, returned by sends through an offer
// and by the scheduler's Deliver and Refuse. They can be matched with
// errors.Is.
var (
	// ErrNilReceiver is returned when a request is sent without a receiver.
	ErrNilReceiver = errors.New("peersched: receiver is nil")
	// ErrBadTimeout is returned for a zero or negative timeout or digest time.
	ErrBadTimeout = errors.New("peersched: timeout must be positive")
	// ErrTooManyRequests is returned when the cap on requests in flight is reached.
	ErrTooManyRequests = errors.New("peersched: too many requests in flight")

	// ErrUnknownRequest: a response (or a refusal) names a request this
	// scheduler never issued (or whose send the host refused).
	ErrUnknownRequest = errors.New("peersched: response to an unknown request")
	// ErrWrongPeer: a response came from a peer other than the one asked.
	ErrWrongPeer = errors.New("peersched: response from the wrong peer")
	// ErrDuplicateResponse: the request was already answered, or refused:
	// the peer has had its say.
	ErrDuplicateResponse = errors.New("peersched: duplicate response")
	// ErrLateResponse: the request had already failed (timed out, its peer
	// disconnected) or was withdrawn and its channel has reopened. Once newer
	// requests have reused an ended request's slot the table no longer knows
	// how it ended, and any response to it is late, a second answer included.
	ErrLateResponse = errors.New("peersched: late response")
	// ErrWrongResponseType: the response is not of the type its request
	// expects (offer.Request.Expect). The request is left as it was, live:
	// its right response may still come.
	ErrWrongResponseType = errors.New("peersched: response of the wrong type")
)

package limit

import (
	"errors"
	"fmt"
	"time"
)

// Limiter decides how many requests one peer may have in flight at once. The
// scheduler keeps one Limiter per connected peer, tells it how each request
// to that peer ended (Observe), and opens a channel to the peer only while
// the peer has fewer requests in flight than Limit.
//
// # The contract between the scheduler and a Limiter
//
//   - Limit is always within the Bounds the host gave at ConnectWith
//     (peer.Options.Bounds), and equals
//     Bounds.Start until the first Observe.
//   - Limit changes only inside Observe, so the scheduler may read it once
//     after each Observe and keep the value.
//   - Lowering the limit never cancels work. Requests already in flight run
//     to their end; the scheduler only keeps channels closed as they come
//     back, until the peer's requests in flight fall below the new limit.
//     A Limiter therefore sees, for a while, samples of requests sent under
//     a higher limit than the current one, and must expect it.
//   - The scheduler calls a Limiter from one goroutine at a time, under its
//     own lock: implementations need no locking, must return quickly, and
//     must not call back into the scheduler.
//   - Requests that end for reasons that say nothing about the peer's
//     capacity (the peer disconnected, the scheduler stopped, the host
//     refused the send) are not observed. A request whose receiver was
//     withdrawn is still in flight at the peer, and is observed when its
//     response or deadline comes.
//
// Hosts may implement Limiter themselves; Fixed and Vegas are the two this
// package provides.
type Limiter interface {
	// Limit returns how many requests the peer may have in flight now.
	Limit() int
	// Observe records how one request to the peer ended.
	Observe(s Sample)
}

// Outcome is how a request ended, as far as a Limiter cares.
type Outcome uint8

const (
	// Answered: the peer responded; Sample.RTT is the time from send to
	// response.
	Answered Outcome = iota
	// TimedOut: no response came before the request's deadline. For an
	// overloaded peer that drops what it cannot queue, this is the only
	// sign of overload left.
	TimedOut
	// Failed: the peer refused the request or answered in a way that shows
	// it did not serve it (an explicit overload, an error). Like a timeout,
	// it means "back off". The scheduler reports it for each refusal the
	// host passes to Scheduler.Refuse, with the time from send to refusal;
	// that RTT says how fast the peer said no, not how fast it serves, so
	// Vegas counts the sample as a loss and takes no RTT from it.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Answered:
		return "answered"
	case TimedOut:
		return "timed-out"
	case Failed:
		return "failed"
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Sample is what the scheduler knows about one request to a peer when it
// ends.
type Sample struct {
	Outcome Outcome
	// RTT is the time from send to the end: to the response for Answered,
	// to the deadline or the refusal otherwise. Limiters treat an RTT below
	// one nanosecond (a peer on a simulated network with no delay at all)
	// as one nanosecond.
	RTT time.Duration
	// InFlight is how many requests the peer had in flight when this one
	// ended, this one included. It tells a limiter whether the peer was
	// actually pushed to its limit. (The scheduler counts at the end rather
	// than at the send so that a request in flight costs no memory for it;
	// in a closed loop, where each end is followed by a send, the two are
	// the same, and the largest over a round is the same either way.)
	InFlight int
	// Now is when the request ended, as an offset from an epoch the
	// scheduler chooses (the same for every sample of one scheduler). Fixed
	// and Vegas do not use it; it is there for limiters that work in time
	// windows.
	Now time.Duration
}

// Bounds are the limits a host sets for one peer at Connect: the limit
// starts at Start and a Limiter keeps it within [Min, Max].
type Bounds struct {
	Min, Max, Start int
}

// ErrBadBounds is returned for Bounds that do not satisfy
// 1 <= Min <= Start <= Max.
var ErrBadBounds = errors.New("limit: bad bounds")

// Validate returns an error wrapping ErrBadBounds unless
// 1 <= Min <= Start <= Max.
func (b Bounds) Validate() error {
	if b.Min < 1 || b.Start < b.Min || b.Max < b.Start {
		return fmt.Errorf("%w: need 1 <= min <= start <= max, got min %d start %d max %d", ErrBadBounds, b.Min, b.Start, b.Max)
	}
	return nil
}

// maxInt is the largest int.
const maxInt = int(^uint(0) >> 1)

// clamp returns n moved into [b.Min, b.Max].
func (b Bounds) clamp(n int) int { return min(max(n, b.Min), b.Max) }

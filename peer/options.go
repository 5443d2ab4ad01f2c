package peer

import "github.com/peersched/peersched/limit"

// This file is the host's side of adaptive limits: how a peer's Limiter is
// chosen at connect.

// Defaults of Options: the bounds of the Vegas limiter a peer gets when the
// host names neither a Limiter nor Bounds. A peer starts at four messages in
// flight, the count hosts used to pick by hand, and Vegas's slow start
// doubles it each round while the peer shows no queue, so even a peer that
// serves hundreds at once is found in a few round trips.
const (
	DefaultMinLimit   = 1
	DefaultStartLimit = 4
	DefaultMaxLimit   = 256
)

// Options say how the scheduler decides a peer's limit: how many messages it
// may have in flight at once.
//
// The zero Options is an adaptive limit: a limit.Vegas within
// [DefaultMinLimit, DefaultMaxLimit], starting at DefaultStartLimit.
type Options struct {
	// Limiter decides the peer's limit from how its requests end. It belongs
	// to this connection alone: the scheduler calls it, under its own lock,
	// until the peer disconnects, so it must not be shared with another
	// peer, must return quickly, and must not call into the scheduler (see
	// limit.Limiter). A panic in it is recovered and reported: one in
	// Limit when ConnectWith first reads it refuses the connection
	// (scheduler.ErrLimiterPanicked), and one later, in Observe or in the
	// Limit read after it, leaves the peer the limit it had. Nil means a
	// limit.Vegas within Bounds.
	Limiter limit.Limiter
	// Bounds are the bounds of the default Vegas limiter; they are ignored
	// when Limiter is set. The zero Bounds means the defaults above.
	Bounds limit.Bounds
	// Rate, if not zero, is how fast the peer accepts messages, in its own
	// terms (see limit.Rate): the scheduler never offers a channel of the
	// peer whose message would take it over that rate. While it would, the
	// peer's channels stay closed to offers and senders wait; they open
	// when the peer's bucket pays for a message again. The zero Rate paces
	// nothing.
	Rate limit.Rate
}

// NewPacer returns the limit.Pacer that keeps the peer within o.Rate, or
// nil for the zero Rate. It fails with an error wrapping limit.ErrBadRate
// for a Rate that is not valid (see limit.Rate.Validate).
func (o Options) NewPacer() (*limit.Pacer, error) {
	if o.Rate.IsZero() {
		return nil, nil
	}
	return limit.NewPacer(o.Rate)
}

// NewLimiter returns the Limiter o names: o.Limiter, or a new limit.Vegas
// within o.Bounds. It fails with an error wrapping limit.ErrBadBounds for
// bounds that do not satisfy 1 <= Min <= Start <= Max.
func (o Options) NewLimiter() (limit.Limiter, error) {
	if o.Limiter != nil {
		return o.Limiter, nil
	}
	b := o.Bounds
	if b == (limit.Bounds{}) {
		b = limit.Bounds{Min: DefaultMinLimit, Start: DefaultStartLimit, Max: DefaultMaxLimit}
	}
	v, err := limit.NewVegas(limit.VegasConfig{Bounds: b})
	if err != nil {
		return nil, err
	}
	return v, nil
}

package limit

import (
	"errors"
	"fmt"
	"time"
)

// Rate is how fast one peer accepts messages, said in the peer's own terms:
// each message costs it Cost units, and it accepts PerSecond units a second
// sustained and up to Burst units at once after a quiet spell. A rippled
// peer, for instance, charges 250 units for a TMGetObjectByHash query and
// warns at a balance of about 5,000 units a second (20 queries a second):
// Rate{Cost: 250, PerSecond: 4000, Burst: 250 * 64} keeps to 16 queries a
// second, after a burst of up to 64.
//
// The zero Rate declares nothing: the peer is not paced.
type Rate struct {
	// Cost is what one message costs the peer, in its units.
	Cost int64
	// PerSecond is how many units the peer accepts each second, sustained.
	PerSecond int64
	// Burst is how many units the peer accepts at once after a quiet
	// spell: at least Cost (or no message could ever go), at most
	// MaxBurst.
	Burst int64
}

// ErrBadRate is returned for a Rate that is neither zero nor Valid.
var ErrBadRate = errors.New("limit: bad rate")

// IsZero reports whether r declares nothing.
func (r Rate) IsZero() bool { return r == Rate{} }

// Validate returns an error wrapping ErrBadRate unless r is zero or has
// 1 <= Cost <= Burst <= MaxBurst and PerSecond >= 1.
func (r Rate) Validate() error {
	if r.IsZero() {
		return nil
	}
	if r.Cost < 1 || r.PerSecond < 1 || r.Burst < r.Cost || r.Burst > MaxBurst {
		return fmt.Errorf("%w: need 1 <= cost <= burst <= %d and a rate of at least 1 a second, got cost %d, %d a second, burst %d",
			ErrBadRate, MaxBurst, r.Cost, r.PerSecond, r.Burst)
	}
	return nil
}

// Pacer keeps one peer within its Rate: a token bucket of the peer's units,
// full at first, that gains PerSecond units a second up to Burst, and from
// which every message sent to the peer takes Cost. Its arithmetic is
// Bucket's: exact to the nanosecond, with time as a time.Duration offset
// from an epoch the caller chooses, and time never going back.
//
// A Pacer is not safe for concurrent use; the scheduler guards the ones it
// keeps with its own lock. The zero value is not usable; build one with
// NewPacer.
type Pacer struct {
	rate   Rate
	bucket Bucket
}

// NewPacer returns a Pacer for r, full. It fails with an error wrapping
// ErrBadRate if r is zero or not valid.
func NewPacer(r Rate) (*Pacer, error) {
	if r.IsZero() {
		return nil, fmt.Errorf("%w: a zero rate paces nothing", ErrBadRate)
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	b, err := NewBucket(r.PerSecond, r.Burst)
	if err != nil {
		panic(err) // Validate has ruled it out
	}
	return &Pacer{rate: r, bucket: *b}, nil
}

// Rate returns the rate p keeps to.
func (p *Pacer) Rate() Rate { return p.rate }

// Allows returns how many messages the peer accepts at now, one after
// another: the whole units p holds divided by Cost, rounded down.
func (p *Pacer) Allows(now time.Duration) int64 {
	return p.bucket.Tokens(now) / p.rate.Cost
}

// Wait returns how long after now p will allow one message, if nothing is
// sent meanwhile: 0 if it allows one at now.
func (p *Pacer) Wait(now time.Duration) time.Duration {
	w, _ := p.bucket.Wait(now, p.rate.Cost) // Cost <= Burst: no error
	return w
}

// Take charges one message sent at now and reports true, if p allows one;
// otherwise it charges nothing and reports false.
func (p *Pacer) Take(now time.Duration) bool {
	w, _ := p.bucket.Take(now, p.rate.Cost) // Cost <= Burst: no error
	return w == 0
}

// Give takes back the charge of one message that was never sent (the
// transport refused it), as of the latest instant p has seen; p holds no
// more than Burst afterwards.
func (p *Pacer) Give() {
	_ = p.bucket.Give(p.rate.Cost) // Cost <= Burst: no error
}

package limit

import (
	"errors"
	"fmt"
	"time"
)

// Rate is how fast one peer accepts messages, said in the peer's own terms:
// each message costs it Cost units (unless its sender declares another
// cost, as a notification that costs the peer less than a query does),
// and it accepts PerSecond units a second sustained and up to Burst units
// at once after a quiet spell. A rippled
// peer, for instance, charges 250 units for a TMGetObjectByHash query and
// warns at a balance of about 5,000 units a second (20 queries a second):
// Rate{Cost: 250, PerSecond: 4000, Burst: 250 * 64} keeps to 16 queries a
// second, after a burst of up to 64.
//
// The zero Rate declares nothing: the peer is not paced.
type Rate struct {
	// Cost is what one message costs the peer, in its units, when its
	// sender declares no cost of its own (see Pacer.Cost).
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
// which every message sent to the peer takes what it costs: the cost its
// sender declared, or the Rate's Cost if it declared none. Its arithmetic
// is Bucket's: exact to the nanosecond, with time as a time.Duration
// offset from an epoch the caller chooses, and time never going back.
//
// A Pacer counts the messages the peer accepts (Allows, Wait) at its
// dearest: the most one message may cost, which is the Rate's Cost until
// the caller raises it (Dearest). A count made at the dearest cost is
// safe for every message, whatever it declares: each of them fits,
// one after another, and a cheaper one leaves the rest in the bucket.
//
// A Pacer is not safe for concurrent use; the scheduler guards the ones it
// keeps with its own lock. The zero value is not usable; build one with
// NewPacer.
type Pacer struct {
	rate    Rate
	dearest int64 // the most one message may cost: Rate.Cost <= dearest <= Burst
	bucket  Bucket
}

// NewPacer returns a Pacer for r, full, whose dearest message costs
// r.Cost. It fails with an error wrapping ErrBadRate if r is zero or not
// valid.
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
	return &Pacer{rate: r, dearest: r.Cost, bucket: *b}, nil
}

// Rate returns the rate p keeps to.
func (p *Pacer) Rate() Rate { return p.rate }

// Cost returns what a message whose sender declared cost costs the peer:
// cost itself, or the Rate's Cost for 0 (a sender that declares nothing).
// It fails with an error wrapping ErrBadCount for a negative cost and
// ErrOverBurst for one above the Burst, which the peer could never pay.
func (p *Pacer) Cost(cost int64) (int64, error) {
	if cost == 0 {
		return p.rate.Cost, nil
	}
	if err := p.bucket.check(cost); err != nil {
		return 0, err
	}
	return cost, nil
}

// Dearest returns the most one message may cost, at which Allows and Wait
// count.
func (p *Pacer) Dearest() int64 { return p.dearest }

// RaiseDearest makes cost the most one message may cost, if it is more
// than Dearest; a lower cost changes nothing. It fails, changing nothing,
// with an error wrapping ErrBadCount for a negative cost and ErrOverBurst
// for one above the Burst, which the peer could never pay.
func (p *Pacer) RaiseDearest(cost int64) error {
	if err := p.bucket.check(cost); err != nil {
		return err
	}
	p.dearest = max(p.dearest, cost)
	return nil
}

// Allows returns how many messages the peer accepts at now, one after
// another, whatever each costs up to Dearest: the whole units p holds
// divided by Dearest, rounded down.
func (p *Pacer) Allows(now time.Duration) int64 {
	return p.bucket.Tokens(now) / p.dearest
}

// Wait returns how long after now p will allow one message (of Dearest's
// cost), if nothing is sent meanwhile: 0 if it allows one at now.
func (p *Pacer) Wait(now time.Duration) time.Duration {
	w, _ := p.bucket.Wait(now, p.dearest) // dearest <= Burst: no error
	return w
}

// Take charges a message that costs cost (as Cost returns it), sent at
// now, and reports true, if p holds cost units; otherwise it charges
// nothing and reports false. It fails, charging nothing, with an error
// wrapping ErrBadCount for a negative cost and ErrOverBurst for one above
// the Burst.
func (p *Pacer) Take(now time.Duration, cost int64) (bool, error) {
	w, err := p.bucket.Take(now, cost)
	return err == nil && w == 0, err
}

// Give takes back the charge, cost, of a message that was never sent (the
// transport refused it), as of the latest instant p has seen; p holds no
// more than Burst afterwards. It fails, changing nothing, with an error
// wrapping ErrBadCount for a negative cost and ErrOverBurst for one above
// the Burst.
func (p *Pacer) Give(cost int64) error {
	return p.bucket.Give(cost)
}

package limit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Bucket is a token bucket: it holds up to a burst of tokens and gains rate
// tokens per second, and a message may go only when it can take its tokens.
// One Bucket counts messages (one token each); a second one, with a rate in
// bytes per second, counts the bytes senders declare. To charge a message
// to both, ask each with Wait and take from both only when both say 0.
//
// Tokens are counted exactly, in billionths of a token: a bucket gaining
// rate tokens per second gains exactly rate billionths per nanosecond, so
// every wait is an exact number of nanoseconds (rounded up), and the
// bucket's state depends only on the instants it is asked at, not on how
// often it is asked. Any rate up to math.MaxInt64 and any burst up to
// MaxBurst work without overflow.
//
// Times are time.Duration offsets from an epoch the caller chooses. Time
// does not go back for a Bucket: a now earlier than one it has already seen
// is treated as that later instant (no tokens are gained, and waits are
// measured from it, plus the difference).
//
// A Bucket is not safe for concurrent use. The zero value is not usable;
// build one with NewBucket.
type Bucket struct {
	rate    int64         // tokens per second, and billionths of a token per nanosecond
	burst   int64         // tokens
	level   int64         // billionths of a token held at time at; 0..burst·1e9
	at      time.Duration // the latest now seen
	started bool          // a now has been seen: at is meaningful
}

// MaxBurst is the largest burst a Bucket takes: its count of billionths of
// a token must fit in an int64. It is about 9.2 billion tokens.
const MaxBurst = math.MaxInt64 / nano

// nano is how many billionths make a token (and nanoseconds a second).
const nano = int64(time.Second)

// Errors from a Bucket. They can be matched with errors.Is.
var (
	// ErrBadBucket is returned by NewBucket for a rate below 1 or a burst
	// outside [1, MaxBurst].
	ErrBadBucket = errors.New("limit: bad token bucket")
	// ErrBadCount is returned by Wait and Take for a negative count.
	ErrBadCount = errors.New("limit: negative token count")
	// ErrOverBurst is returned by Wait and Take for a count above the
	// burst: the bucket can never hold that many, so waiting would be
	// forever.
	ErrOverBurst = errors.New("limit: count above the burst")
)

// NewBucket returns a full bucket that holds up to burst tokens and gains
// rate tokens per second. It fails with an error wrapping ErrBadBucket if
// rate < 1 or burst is outside [1, MaxBurst].
func NewBucket(rate, burst int64) (*Bucket, error) {
	if rate < 1 {
		return nil, fmt.Errorf("%w: rate %d below 1 per second", ErrBadBucket, rate)
	}
	if burst < 1 || burst > MaxBurst {
		return nil, fmt.Errorf("%w: burst %d outside [1, %d]", ErrBadBucket, burst, MaxBurst)
	}
	return &Bucket{rate: rate, burst: burst, level: burst * nano}, nil
}

// Rate returns the tokens gained per second.
func (b *Bucket) Rate() int64 { return b.rate }

// Burst returns the most tokens the bucket holds.
func (b *Bucket) Burst() int64 { return b.burst }

// Tokens returns how many whole tokens the bucket holds at now.
func (b *Bucket) Tokens(now time.Duration) int64 {
	b.advance(now)
	return b.level / nano
}

// Affords returns how many takes of n tokens each the bucket could pay for
// at now, one after another: its whole tokens divided by n, rounded down.
// It takes nothing. For n = 0 it returns math.MaxInt64: what costs nothing
// is never held back. It fails with ErrBadCount if n < 0 and ErrOverBurst
// if n is above the burst (no wait would ever pay for one).
func (b *Bucket) Affords(now time.Duration, n int64) (int64, error) {
	if err := b.check(n); err != nil {
		return 0, err
	}
	if n == 0 {
		return math.MaxInt64, nil
	}
	return b.Tokens(now) / n, nil
}

// Wait returns how long after now the bucket will hold n tokens, if nothing
// is taken meanwhile: 0 if it holds them at now. It takes nothing. It fails
// with ErrBadCount if n < 0 and ErrOverBurst if n is above the burst.
func (b *Bucket) Wait(now time.Duration, n int64) (time.Duration, error) {
	if err := b.check(n); err != nil {
		return 0, err
	}
	behind := b.advance(now)
	need := n*nano - b.level
	if need <= 0 {
		return behind, nil
	}
	// need <= burst·1e9 <= MaxInt64 and rate >= 1: the quotient fits, and
	// so does the sum unless behind is absurd, where it saturates.
	wait := time.Duration((need-1)/b.rate + 1)
	if behind > math.MaxInt64-wait {
		return math.MaxInt64, nil
	}
	return behind + wait, nil
}

// Take takes n tokens if the bucket holds them at now, and returns 0.
// Otherwise it takes nothing and returns how long after now the bucket will
// hold them (what Wait returns). It fails, taking nothing, with ErrBadCount
// if n < 0 and ErrOverBurst if n is above the burst.
func (b *Bucket) Take(now time.Duration, n int64) (time.Duration, error) {
	wait, err := b.Wait(now, n)
	if err != nil || wait > 0 {
		return wait, err
	}
	b.level -= n * nano
	return 0, nil
}

// Give puts back n tokens that Take took for a message that was never sent
// (the transport refused it), so that a refusal costs no budget. The bucket
// holds no more than its burst afterwards. Give does not move the bucket's
// clock: the tokens are back as of the latest instant it has seen. A bucket
// that gives back only what it took never admits more than a bucket that
// never took them would. It fails, changing nothing, with ErrBadCount if
// n < 0 and ErrOverBurst if n is above the burst.
func (b *Bucket) Give(n int64) error {
	if err := b.check(n); err != nil {
		return err
	}
	b.level = min(b.level+n*nano, b.burst*nano) // both terms <= MaxBurst·1e9: no overflow
	return nil
}

func (b *Bucket) check(n int64) error {
	if n < 0 {
		return fmt.Errorf("%w: %d", ErrBadCount, n)
	}
	if n > b.burst {
		return fmt.Errorf("%w: %d tokens, burst %d", ErrOverBurst, n, b.burst)
	}
	return nil
}

// advance brings the level up to now, or to the latest instant seen if now
// is earlier, and returns how far now is behind that instant (0 normally).
func (b *Bucket) advance(now time.Duration) (behind time.Duration) {
	if !b.started {
		b.started, b.at = true, now // full, and full until now
		return 0
	}
	if now <= b.at {
		return subSaturating(b.at, now)
	}
	full := b.burst * nano
	room := full - b.level
	if elapsed := int64(subSaturating(now, b.at)); elapsed > room/b.rate {
		b.level = full
	} else {
		b.level += elapsed * b.rate // at most room: no overflow
	}
	b.at = now
	return 0
}

// subSaturating returns a-b for a >= b, or math.MaxInt64 if that overflows.
func subSaturating(a, b time.Duration) time.Duration {
	if d := a - b; d >= 0 {
		return d
	}
	return math.MaxInt64
}

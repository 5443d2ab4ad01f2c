package scheduler

import (
	"fmt"
	"math"
	"time"

	"github.com/peersched/peersched/limit"
)

// Budget is the traffic budget of the whole application, shared by every
// sender and every peer. While it is spent, no offer is made: senders wait
// in the queue, keeping their places, and get no error. When it allows
// again (a message ends, or the rate's next token is due, for which the
// scheduler arms its timer) offers resume in the usual order: by priority,
// then arrival, a priority passed over Config.PassOverLimit times taking
// its turn. An offer's size never exceeds what the budget allows at
// that moment, so every send through it fits.
//
// The byte rate is paid in the same order. A sender declares the size of
// each of its messages when it is scheduled (offer.Options.Bytes). When the
// sender whose turn it is to be offered channels declares more bytes than
// the budget holds, no sender is offered anything until the budget has them (at most
// ByteBurst/ByteRate seconds): senders behind it, even those that declare
// no size, do not go first and take the bytes it waits for, so a large
// message is never starved by a stream of small ones. Its offer then lets
// it send as many messages as the bytes pay for.
//
// The budget bounds traffic, not memory: the caps that return errors
// (Config.MaxSenders, Config.MaxRequests) stay, as memory bounds.
//
// The zero Budget allows everything.
type Budget struct {
	// MaxInFlight caps the messages in flight over every peer: requests
	// not yet ended (withdrawn ones included, until their channels reopen)
	// and notifications being digested, that is, the closed channels.
	// 0 means no cap.
	MaxInFlight int
	// Rate caps the messages sent, over every peer, at Rate per second on
	// average, with a token bucket that holds up to Burst tokens: a request
	// or notification takes a token when its send begins, and gets it back
	// if the host refuses the send. 0 means no rate limit.
	Rate int64
	// Burst is how many messages may go at once after a quiet spell: the
	// bucket's size, at most limit.MaxBurst. 0 means 1. It needs a Rate.
	Burst int64
	// ByteRate caps the bytes sent, over every peer, at ByteRate per second
	// on average, counting each message at the size its sender declared
	// (offer.Options.Bytes; a sender that declares none is not counted),
	// with a token bucket that holds up to ByteBurst bytes: a message takes
	// its size when its send begins, and gets it back if the host refuses
	// the send. 0 means no byte limit.
	ByteRate int64
	// ByteBurst is how many bytes may go at once after a quiet spell: the
	// bucket's size, at most limit.MaxBurst. It is also the largest size a
	// sender may declare: ScheduleWith refuses a larger one with
	// ErrBadBytes, since the bucket could never hold enough to pay for it
	// (clamping the charge, or letting the bucket go into debt, would
	// overspend the budget). A ByteRate needs one, and it needs a ByteRate.
	ByteBurst int64
}

// validate returns an error wrapping ErrBadConfig for a budget that
// describes no traffic.
func (b Budget) validate() error {
	switch {
	case b.MaxInFlight < 0 || b.Rate < 0 || b.Burst < 0 || b.ByteRate < 0 || b.ByteBurst < 0:
		return fmt.Errorf("%w: negative budget %+v", ErrBadConfig, b)
	case b.Burst > limit.MaxBurst:
		return fmt.Errorf("%w: budget burst %d above %d", ErrBadConfig, b.Burst, limit.MaxBurst)
	case b.Burst > 0 && b.Rate == 0:
		return fmt.Errorf("%w: budget burst %d without a rate", ErrBadConfig, b.Burst)
	case b.ByteBurst > limit.MaxBurst:
		return fmt.Errorf("%w: budget byte burst %d above %d", ErrBadConfig, b.ByteBurst, limit.MaxBurst)
	case b.ByteBurst > 0 && b.ByteRate == 0:
		return fmt.Errorf("%w: budget byte burst %d without a byte rate", ErrBadConfig, b.ByteBurst)
	case b.ByteRate > 0 && b.ByteBurst == 0:
		return fmt.Errorf("%w: budget byte rate %d without a byte burst (the largest size a sender may declare)", ErrBadConfig, b.ByteRate)
	}
	return nil
}

// checkBytes returns an error wrapping ErrBadBytes if a sender may not
// declare bytes for each of its messages under b.
func (b Budget) checkBytes(bytes int64) error {
	switch {
	case bytes < 0:
		return fmt.Errorf("%w: %d bytes", ErrBadBytes, bytes)
	case b.ByteRate > 0 && bytes > b.ByteBurst:
		return fmt.Errorf("%w: %d bytes, above the byte budget's burst of %d", ErrBadBytes, bytes, b.ByteBurst)
	}
	return nil
}

// buckets returns the token buckets of b's rates, each nil if b has none.
func (b Budget) buckets() (messages, bytes *limit.Bucket) {
	var err error
	if b.Rate > 0 {
		if messages, err = limit.NewBucket(b.Rate, max(b.Burst, 1)); err != nil {
			panic(err) // validate has ruled it out
		}
	}
	if b.ByteRate > 0 {
		if bytes, err = limit.NewBucket(b.ByteRate, b.ByteBurst); err != nil {
			panic(err) // validate has ruled it out
		}
	}
	return messages, bytes
}

// budgetRoomLocked returns how many messages of the given declared size
// the budget allows to be sent now: 0 when it is spent, math.MaxInt when it
// caps nothing. When a rate is what is spent, it arms the timer for the
// tokens it waits for, so that waiting senders are offered channels then.
// Caller holds offersMu.
func (s *Scheduler) budgetRoomLocked(bytes int64) int {
	room := math.MaxInt
	if s.budget.MaxInFlight > 0 {
		room = s.budget.MaxInFlight - s.pool.ClosedChannels()
		if room <= 0 {
			return 0
		}
	}
	if s.bucket == nil && (s.byteBucket == nil || bytes == 0) {
		return room
	}
	now := s.now()
	if s.bucket != nil {
		room = s.roomInLocked(s.bucket, now, 1, room)
	}
	if s.byteBucket != nil && bytes > 0 && room > 0 {
		room = s.roomInLocked(s.byteBucket, now, bytes, room)
	}
	return room
}

// roomInLocked returns room cut to how many messages costing cost tokens
// each b pays for at now; if none, it arms the timer for when b will pay
// for one and returns 0. cost is at most b's burst (1, or a size
// ScheduleWith checked), so b's methods cannot fail. Caller holds
// offersMu.
func (s *Scheduler) roomInLocked(b *limit.Bucket, now time.Duration, cost int64, room int) int {
	n, _ := b.Affords(now, cost)
	if n == 0 {
		wait, _ := b.Wait(now, cost)
		s.waitForTokensLocked(now, wait)
		return 0
	}
	return int(min(int64(room), n))
}

// waitForTokensLocked makes the timer fire when the tokens that waiting
// senders need are due, wait after now. Caller holds offersMu.
func (s *Scheduler) waitForTokensLocked(now, wait time.Duration) {
	s.requestsMu.Lock()
	s.tokenDue, s.tokenAt = true, now+wait
	s.armTimerLocked(now)
	s.requestsMu.Unlock()
}

// spendLocked charges the budget for a message of the open offer whose
// send begins now: a token, if there is a rate, and the bytes its sender
// declared, if there is a byte rate; it returns the bytes, to refund them
// if the host refuses the send. The offer's size has made sure the budget
// holds enough. Caller holds offersMu.
func (s *Scheduler) spendLocked() (bytes int64) {
	if s.bucket == nil && s.byteBucket == nil {
		return 0
	}
	now := s.now()
	if s.bucket != nil {
		_, _ = s.bucket.Take(now, 1) // cannot fail: see budgetRoomLocked
	}
	if s.byteBucket != nil && s.offerBytes > 0 {
		_, _ = s.byteBucket.Take(now, s.offerBytes) // nor can this
		return s.offerBytes
	}
	return 0
}

// refundLocked gives back what spendLocked charged for a message the host
// refused: its token and its bytes. Caller holds offersMu.
func (s *Scheduler) refundLocked(bytes int64) {
	if s.bucket != nil {
		_ = s.bucket.Give(1) // 1 <= the burst: no error
	}
	if s.byteBucket != nil && bytes > 0 {
		_ = s.byteBucket.Give(bytes) // at most the burst: no error
	}
}

// tokenDueLocked reports whether the timer, firing at now, finds the rate's
// next token due, for which senders wait; it stops waiting for it. Caller
// holds requestsMu.
func (s *Scheduler) tokenDueLocked(now time.Duration) bool {
	if !s.tokenDue || now < s.tokenAt {
		return false
	}
	s.tokenDue = false
	return true
}

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
// then arrival. An offer's size never exceeds what the budget allows at
// that moment, so every send through it fits.
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
}

// validate returns an error wrapping ErrBadConfig for a budget that
// describes no traffic.
func (b Budget) validate() error {
	switch {
	case b.MaxInFlight < 0 || b.Rate < 0 || b.Burst < 0:
		return fmt.Errorf("%w: negative budget %+v", ErrBadConfig, b)
	case b.Burst > limit.MaxBurst:
		return fmt.Errorf("%w: budget burst %d above %d", ErrBadConfig, b.Burst, limit.MaxBurst)
	case b.Burst > 0 && b.Rate == 0:
		return fmt.Errorf("%w: budget burst %d without a rate", ErrBadConfig, b.Burst)
	}
	return nil
}

// bucket returns the token bucket of b's rate, or nil if b has none.
func (b Budget) bucket() *limit.Bucket {
	if b.Rate == 0 {
		return nil
	}
	bk, err := limit.NewBucket(b.Rate, max(b.Burst, 1))
	if err != nil {
		panic(err) // validate has ruled it out
	}
	return bk
}

// budgetRoomLocked returns how many messages the budget allows to be sent
// now: 0 when it is spent, math.MaxInt when it caps nothing. When the rate
// is what is spent, it arms the timer for the next token, so that waiting
// senders are offered channels then. Caller holds offersMu.
func (s *Scheduler) budgetRoomLocked() int {
	room := math.MaxInt
	if s.budget.MaxInFlight > 0 {
		room = s.budget.MaxInFlight - s.pool.ClosedChannels()
		if room <= 0 {
			return 0
		}
	}
	if s.bucket != nil {
		now := s.now()
		tokens := s.bucket.Tokens(now)
		if tokens == 0 {
			wait, _ := s.bucket.Wait(now, 1) // 1 <= the burst: no error
			s.requestsMu.Lock()
			s.tokenDue, s.tokenAt = true, now+wait
			s.armTimerLocked(now)
			s.requestsMu.Unlock()
			return 0
		}
		room = int(min(int64(room), tokens))
	}
	return room
}

// spendLocked charges the budget for a message whose send begins now: a
// token, if there is a rate. The offer's size has made sure there is one.
// Caller holds offersMu.
func (s *Scheduler) spendLocked() {
	if s.bucket != nil {
		_, _ = s.bucket.Take(s.now(), 1) // cannot fail: see budgetRoomLocked
	}
}

// refundLocked gives back what spendLocked charged for a message the host
// refused. Caller holds offersMu.
func (s *Scheduler) refundLocked() {
	if s.bucket != nil {
		_ = s.bucket.Give(1) // 1 <= the burst: no error
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

package scheduler

import (
	"time"

	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/limit"
)

// Every request and notification has one deadline, kept with its record in
// the request table and ordered by (deadline, order armed), and a single
// clock timer is armed to the earliest. A runtime timer per message would
// cost an allocation and a timer-heap operation per request, and the mock
// clock fires equal deadlines in an unstable order; one ordered structure has
// neither problem.

// armTimerLocked makes sure the timer will fire no later than the earliest
// deadline, the budget's next token if senders wait for it, or the moment
// a paced peer's rate pays for a message again. It only moves the timer
// earlier: a timer that fires before anything is due (because the
// deadline it was armed for was removed) simply re-arms, which is cheaper
// than re-arming on every removal. Caller holds offersMu (which guards the
// paced peers) and requestsMu.
func (s *Scheduler) armTimerLocked(now time.Duration) {
	next, ok := s.table.Next()
	if s.tokenDue && (!ok || s.tokenAt < next) {
		next, ok = s.tokenAt, true
	}
	if s.paced {
		if due, held := s.holds.next(); held && (!ok || due < next) {
			next, ok = due, true
		}
	}
	if !ok || (s.timerArmed && next >= s.timerAt) {
		return
	}
	s.timerArmed, s.timerAt = true, next
	wait := max(next-now, 0)
	if s.timer == nil {
		s.timer = s.clock.AfterFunc(wait, s.onTimer)
	} else {
		s.timer.Reset(wait)
	}
}

// armTimerNowLocked is armTimerLocked for a caller that holds only
// offersMu: a paced peer it has just held must be woken when its rate pays
// again. Caller holds offersMu.
func (s *Scheduler) armTimerNowLocked() {
	s.requestsMu.Lock()
	s.armTimerLocked(s.now())
	s.requestsMu.Unlock()
}

// NextWake reports when the scheduler's timer is next due to fire, on the
// scheduler's clock, and false while it is not armed: nothing waits for a
// time (no deadline, no budget token, no paced peer held back), or the
// scheduler has stopped. When it fires, the scheduler ends what is due
// and re-arms the timer for what remains, so the answer changes then, and
// whenever a new deadline comes before it.
//
// The timer only moves earlier while it is armed: when what it was armed
// for goes away (a request answered before its deadline), it still fires
// at the time reported, finds nothing due and re-arms. A time at or before
// the clock's Now means the timer is due now.
//
// The timer is armed only within a call that has just read the clock (to
// know how far off the deadline is), and disarmed only when it fires or the
// scheduler stops. So an embedder that drives the clock itself, as a
// simulation does, can ask NextWake after each call into the scheduler
// that read the clock, and run the timer's function only when it is due.
// It serves anyone who wants to see when the scheduler will next wake,
// too. It takes the lock that guards the timer, briefly, and may be called
// from any goroutine, callbacks included.
func (s *Scheduler) NextWake() (time.Time, bool) {
	s.requestsMu.Lock()
	defer s.requestsMu.Unlock()
	if !s.timerArmed {
		return time.Time{}, false
	}
	return s.epoch.Add(s.timerAt), true
}

// onTimer runs on the clock's goroutine when the timer fires.
func (s *Scheduler) onTimer() {
	if !s.enterTimer() {
		return
	}
	defer s.leaveTimer()
	s.offersMu.Lock()
	s.requestsMu.Lock()
	s.timerArmed = false
	now := s.now()
	reopened := s.expireDueLocked(now)
	if s.tokenDueLocked(now) {
		reopened = true
	}
	if s.paced && s.refillDueLocked(now) {
		reopened = true
	}
	s.armTimerLocked(now)
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.afterReopening(reopened)
}

// expireDueLocked ends every message whose deadline is at or before now:
// requests fail with Timeout (their callbacks are queued) and notifications
// are done being digested. Their channels reopen; it reports whether any
// did. Requests whose soft deadline is due have their OnSlow queued and go
// on. Caller holds offersMu and requestsMu.
func (s *Scheduler) expireDueLocked(now time.Duration) (reopened bool) {
	// Most calls find nothing due: looking at the earliest deadline first
	// spares them Expire's two result records, 128 bytes zeroed and copied
	// on every response.
	if next, ok := s.table.Next(); !ok || next > now {
		return false
	}
	for {
		f, slow, ok := s.table.Expire(now)
		if !ok {
			return reopened
		}
		if slow.ID != 0 {
			// A soft deadline: the request goes on; its receiver is told.
			s.callbacksMu.Lock()
			s.pending.pushSlow(slow)
			s.callbacksMu.Unlock()
			continue
		}
		s.releaseLocked(f.Terms)
		if !f.Notification {
			s.countEndLocked(&f, now)
			s.callbacksMu.Lock()
			s.oweLocked(&f)
			s.callbacksMu.Unlock()
			// A timeout is evidence too: the peer took at least this long,
			// and may be overloaded. Without it a peer that never answers
			// would keep the response time of a peer with no samples, 0, and
			// be offered before every peer that answers.
			s.observeLocked(&f, limit.TimedOut, now)
		}
		reopened = s.endLocked(f.Peer) || reopened
	}
}

// observeLocked tells the pool how the request f ended at now, for its peer's
// response time and limit. A panic in the peer's Limiter is counted at once
// and reported through the logger once no lock is held. Caller holds
// offersMu and requestsMu.
func (s *Scheduler) observeLocked(f *requests.Finished, outcome limit.Outcome, now time.Duration) {
	sample := limit.Sample{Outcome: outcome, RTT: now - f.SentAt, Now: now} // the pool fills in InFlight
	if p := s.pool.Observe(f.Peer, sample); p != nil {
		s.panics.Add(1)
		s.callbacksMu.Lock()
		s.pending.push(callback{kind: callReport, response: p})
		s.callbacksMu.Unlock()
	}
}

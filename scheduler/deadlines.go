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

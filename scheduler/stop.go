package scheduler

import (
	"context"

	"github.com/peersched/peersched/offer"
)

// Stop shuts the scheduler down: every pending request's receiver is told
// Shutdown, every waiting sender is discarded, and every later call that
// would add work fails with ErrStopped. Channels closed by requests and
// notifications reopen, so each peer's counts still add up. Stop is
// idempotent.
//
// Stop changes the state at once and does not wait for user code, so it may
// be called from anywhere: from a callback, from the host's Send, or from a
// goroutine a callback is waiting for. The callbacks it causes run after it
// returns, on the callback goroutine (with Config.InlineCallbacks, on the
// goroutine that calls Stop, before it returns, unless callbacks are already
// running elsewhere). Use Shutdown to wait for them.
//
// Two kinds of sender are not discarded at once. A sender whose OnOffer is
// running leaves by its send if one succeeds, and is discarded otherwise when
// the call returns. A request whose host send is still in progress is told
// Shutdown when that send returns.
func (s *Scheduler) Stop() {
	s.offersMu.Lock()
	s.requestsMu.Lock()
	if !s.stopped {
		s.stopLocked()
	}
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.callbacksMu.Lock()
	s.runLocked()
	s.settleLocked()
	s.callbacksMu.Unlock()
}

// Shutdown stops the scheduler (see Stop) and waits until every callback and
// host send that Stop caused or found running has finished, no timer callback
// of the scheduler is running, and the scheduler's own goroutine has exited:
// from then on none of the scheduler's code runs. It returns nil then, or
// ctx's error if ctx ends first; the shutdown goes on regardless, and a
// second Shutdown waits for it again.
//
// It is used as http.Server.Shutdown is: once it is called the scheduler
// takes no new work (every method that would add some fails with
// ErrStopped, as a server's Serve returns ErrServerClosed, and a waiting
// Call returns ErrStopped), it cannot be restarted, and a program should
// wait for Shutdown to return before it exits. One difference: a server's
// Shutdown lets active requests finish, while Stop fails every request in
// flight at once with receiver.Shutdown; what Shutdown waits for is the
// callbacks that tell their receivers. A component that wants its
// requests answered first stops sending and waits for them (for
// Stats().RequestsInFlight to fall, or for its receivers) before it shuts
// the scheduler down.
//
// Shutdown waits for user code, so it must not be called from code that the
// scheduler is waiting for: a callback, the host's Send, or anything they
// wait on. Such a call waits until ctx ends. Call Stop there instead.
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.Stop()
	select {
	case <-s.quiet:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// stopLocked does the work of Stop. Caller holds offersMu and requestsMu.
func (s *Scheduler) stopLocked() {
	s.stopped = true
	s.stoppedFlag.Store(true)
	if s.timer != nil {
		s.timer.Stop()
		s.timerArmed = false
	}

	// A sender whose offer is undecided cannot be discarded yet: a send in
	// progress may still succeed, and that is its exit. The book decides
	// when its sends have ended (decideLocked).
	s.book.StopAll(func(t offer.Ticket) bool {
		_, waiting := s.queue.Remove(t)
		return waiting
	})
	discarded := s.queue.RemoveAll(nil)
	failed := s.table.FailAll(nil)

	s.callbacksMu.Lock()
	// Sends claimed and not yet ended: each counts itself out when its
	// bookkeeping ends (sendEndedLocked), and Shutdown waits for them.
	s.sendsAfterStop = s.book.InProgress()
	for _, snd := range discarded {
		s.pending.push(callback{kind: callDiscard, sender: snd})
	}
	for i := range failed {
		f := &failed[i]
		s.settleEndedLocked(f)
		s.pool.Reopen(f.Peer)
	}
	s.callbacksMu.Unlock()
	// What is left are requests still being sent: their senders end them
	// when the host's send returns.
}

// settleLocked closes quiet once the scheduler has stopped and nothing of
// it can run again: no callback queued or running, no timer callback, no
// host send whose end is still to be recorded. Each of those ends with a
// call here. After Stop none of them can start, so once quiet it stays
// quiet. Caller holds callbacksMu.
func (s *Scheduler) settleLocked() {
	if len(s.idleWaiters) > 0 && s.idleLocked() {
		for _, c := range s.idleWaiters {
			close(c)
		}
		s.idleWaiters = s.idleWaiters[:0]
	}
	if s.quietClosed || !s.stoppedFlag.Load() || s.draining || s.drainers > 0 || s.dispatchWanted ||
		s.pending.len() > 0 || s.timerBusy > 0 || s.sendsAfterStop > 0 {
		return
	}
	s.quietClosed = true
	close(s.quiet)
}

// idleLocked reports whether no callback is queued or running, no offer is
// wanted and no timer callback runs. Caller holds callbacksMu.
func (s *Scheduler) idleLocked() bool {
	return !s.draining && !s.dispatchWanted && s.pending.len() == 0 && s.timerBusy == 0
}

// whenIdle returns a channel that is closed once the scheduler is idle (see
// idleLocked), at once if it is. The tests wait on it to let callbacks on
// the scheduler's goroutine finish; a channel, unlike a condition variable,
// is a wait that a synctest bubble can see through.
func (s *Scheduler) whenIdle() <-chan struct{} {
	s.callbacksMu.Lock()
	defer s.callbacksMu.Unlock()
	c := make(chan struct{})
	if s.idleLocked() {
		close(c)
	} else {
		s.idleWaiters = append(s.idleWaiters, c)
	}
	return c
}

// enterTimer registers a timer firing, unless the scheduler has stopped.
func (s *Scheduler) enterTimer() bool {
	s.callbacksMu.Lock()
	defer s.callbacksMu.Unlock()
	if s.stoppedFlag.Load() {
		return false
	}
	s.timerBusy++
	return true
}

func (s *Scheduler) leaveTimer() {
	s.callbacksMu.Lock()
	s.timerBusy--
	s.settleLocked()
	s.callbacksMu.Unlock()
}

package scheduler

import (
	"bytes"
	"reflect"
	"runtime"
)

// Stop shuts the scheduler down: every pending request's receiver is told
// Shutdown, every waiting sender is discarded, and every later call that would
// add work fails with ErrStopped. Channels closed by requests and
// notifications reopen, so each peer's counts still add up. Stop is
// idempotent.
//
// Called from outside any callback, Stop returns only after the callbacks it
// caused have run, and after any callbacks running on other goroutines have
// finished, and it leaves no goroutine of the scheduler behind. Called from
// inside a callback, it cannot wait for the callback that called it, so it
// returns at once and its callbacks run before the outermost call returns.
//
// One case runs later: a request whose host send was still in progress on
// another goroutine is told Shutdown when that send returns.
func (s *Scheduler) Stop() {
	s.offersMu.Lock()
	s.requestsMu.Lock()
	if !s.stopped {
		s.stopLocked()
	}
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.run()
	s.waitIdle()
}

// stopLocked does the work of Stop. Caller holds offersMu and requestsMu.
func (s *Scheduler) stopLocked() {
	s.stopped = true
	s.stoppedFlag.Store(true)
	if s.timer != nil {
		s.timer.Stop()
		s.timerArmed = false
	}

	// A sender in the middle of its offer cannot be discarded yet: if it
	// sends before the offer closes, that is its exit. closeOfferLocked decides.
	if t, live := s.book.Live(); live {
		if snd, ok := s.queue.Remove(t); ok {
			s.discardOnClose = snd
		}
	}
	discarded := s.queue.RemoveAll(nil)
	failed := s.table.FailAll(nil)

	s.callbacksMu.Lock()
	for _, snd := range discarded {
		s.pending.push(callback{kind: callDiscard, sender: snd})
	}
	for i := range failed {
		f := &failed[i]
		if !f.Notification {
			s.countEndLocked(f)
			s.pending.pushFinished(f)
		}
		s.pool.Reopen(f.Peer)
	}
	s.callbacksMu.Unlock()
	// What is left are requests still being sent: their senders end them
	// when the host's send returns.
}

// waitIdle waits until no callback is running and no timer firing is in
// progress, unless the caller is itself a callback.
func (s *Scheduler) waitIdle() {
	s.callbacksMu.Lock()
	defer s.callbacksMu.Unlock()
	if !s.draining && s.timerBusy == 0 {
		return
	}
	if insideCallback() {
		return
	}
	for s.draining || s.timerBusy > 0 || s.pending.len() > 0 {
		s.idle.Wait()
	}
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
	s.idle.Broadcast()
	s.callbacksMu.Unlock()
}

// drainFrame is how drain appears in a stack trace.
var drainFrame = []byte(runtime.FuncForPC(reflect.ValueOf((*Scheduler).drain).Pointer()).Name() + "(")

// insideCallback reports whether the calling goroutine is running callbacks,
// that is, whether drain is on its stack. Go offers no goroutine-local state,
// and Stop alone needs to know: waiting for the callbacks to finish from
// inside one would wait forever. Stop is rare, so reading the stack is cheap
// enough, and it needs no goroutine identity.
func insideCallback() bool {
	buf := make([]byte, 16<<10)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return bytes.Contains(buf[:n], drainFrame)
		}
		buf = make([]byte, 2*len(buf))
	}
}

package scheduler

import (
	"reflect"
	"runtime"
)

// laneFrames are the functions through which the callback goroutine runs
// user code: a receiver's or a discarded sender's callback, and a sender's
// OnOffer (with the host sends it makes).
var laneFrames = [...]string{
	runtime.FuncForPC(reflect.ValueOf((*Scheduler).invoke).Pointer()).Name(),
	runtime.FuncForPC(reflect.ValueOf((*Scheduler).callSender).Pointer()).Name(),
}

// onCallbackLane reports whether the calling goroutine is running user code
// for a Scheduler's callback goroutine (or, with inline callbacks, for its
// drainer): whether one of laneFrames is on its stack.
//
// This is the one place the scheduler looks at a stack, and only Call
// asks: no other method waits, so no other needs to know (see
// callbacks.go). It reads the program counters of this goroutine's own
// frames, no goroutine ID and no other goroutine, which costs a
// microsecond or two for a blocking call that waits a round trip. It
// cannot tell one Scheduler's frames from another's, so a Call from inside
// any Scheduler's callback is refused: waiting there would hold that
// scheduler's callbacks for a round trip, or for ever if the two wait on
// each other.
func onCallbackLane() bool {
	var pcs [64]uintptr
	for skip := 2; ; {
		n := runtime.Callers(skip, pcs[:])
		frames := runtime.CallersFrames(pcs[:n])
		for {
			f, more := frames.Next()
			for _, name := range laneFrames {
				if f.Function == name {
					return true
				}
			}
			if !more {
				break
			}
		}
		if n < len(pcs) {
			return false
		}
		skip += n
	}
}

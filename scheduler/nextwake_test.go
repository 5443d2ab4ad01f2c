package scheduler

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// wakeReceiver records NextWake from inside its callbacks: the method must
// be callable there without breaking the lock order.
type wakeReceiver struct {
	s     *Scheduler
	start time.Time
	mu    sync.Mutex
	wakes []string
}

func (r *wakeReceiver) record(what string) {
	wake := "not armed"
	if at, ok := r.s.NextWake(); ok {
		wake = at.Sub(r.start).String()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wakes = append(r.wakes, what+": "+wake)
}

func (r *wakeReceiver) OnResponse(peer.RequestID, peer.ID, any) { r.record("response") }
func (r *wakeReceiver) OnFailure(_ peer.RequestID, _ peer.ID, why receiver.Reason) {
	r.record(why.String())
}

func (r *wakeReceiver) seen() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.wakes...)
}

// TestNextWakeFollowsTheTimer: NextWake says when the scheduler's timer is
// due, in both callback modes: not armed with nothing pending, the earliest
// deadline once requests are out, unchanged when what it was armed for is
// answered (the timer only moves earlier), the next deadline once it has
// fired, and not armed again once everything has ended or the scheduler has
// stopped.
func TestNextWakeFollowsTheTimer(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			inBubbleAsIs(t, Config{InlineCallbacks: inline}, func(w *world) {
				start := w.clock.Now()
				wake := func() any {
					w.settle()
					next, ok := w.s.NextWake()
					if !ok {
						return "not armed"
					}
					return next.Sub(start)
				}
				request := func(timeout time.Duration, r receiver.Receiver) peer.RequestID {
					var ids []peer.RequestID
					_, err := w.s.Schedule(&script{onOffer: sendFirst(r, timeout, &ids)}, 0)
					require.NoError(t, err)
					w.settle()
					require.Len(t, ids, 1)
					return ids[0]
				}
				require.Equal(t, "not armed", wake(), "a new scheduler")

				w.connect("A", 4)
				rec := &wakeReceiver{s: w.s, start: start}
				request(10*time.Second, rec)
				require.Equal(t, 10*time.Second, wake(), "the one deadline")

				w.advance(2 * time.Second)
				early := request(5*time.Second, rec)
				require.Equal(t, 7*time.Second, wake(), "an earlier deadline moves it earlier")
				request(20*time.Second, rec)
				require.Equal(t, 7*time.Second, wake(), "a later one does not move it")

				require.NoError(t, w.s.Deliver("A", early, "pong"))
				require.Equal(t, 7*time.Second, wake(), "the timer stays armed for the answered request's deadline")

				w.advance(5 * time.Second) // to 7s: it fires, finds nothing due, re-arms
				require.Equal(t, 10*time.Second, wake())
				w.advance(3 * time.Second) // to 10s: the first request times out
				require.Equal(t, 22*time.Second, wake(), "the last deadline is left")
				w.advance(12 * time.Second)
				require.Equal(t, "not armed", wake(), "nothing pending")

				request(time.Minute, rec)
				require.Equal(t, time.Minute+22*time.Second, wake())
				w.s.Stop()
				require.Equal(t, "not armed", wake(), "stopped")

				// Each callback saw the timer as it stood then, read under
				// the scheduler's own lock from inside the callback.
				require.Equal(t, []string{
					"response: 7s",
					"timeout: 22s",
					"timeout: not armed",
					"shutdown: not armed",
				}, rec.seen())
			})
		})
	}
}

// TestNextWakeOfALateTimerIsPast: while the timer's function has not yet
// run (the clock is late to run it), NextWake reports the time it was due,
// at or before Now: due now.
func TestNextWakeOfALateTimerIsPast(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 1)
		w.holdTimers() // the timer fires, but the scheduler does not hear of it
		w.advance(time.Second)
		_, err := w.s.Schedule(&script{onOffer: sendFirst(newOutcomes(), time.Nanosecond, nil)}, 0)
		require.NoError(t, err)
		w.settle()
		w.advance(time.Second)
		next, ok := w.s.NextWake()
		require.True(t, ok)
		require.False(t, next.After(w.clock.Now()), "due: %v, now %v", next, w.clock.Now())
	})
}

package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Refuse: a peer's explicit "no" to a request, handed back by the host.

// TestRefuseEndsTheRequestAsRefused: an accepted refusal reaches the
// receiver as Refused, on the callback goroutine or inline, reopens the
// channel for the next sender, releases the request's class and budget, is
// counted, and is shown to the peer's limiter as a failure with its RTT,
// leaving the peer's smoothed RTT alone.
func TestRefuseEndsTheRequestAsRefused(t *testing.T) {
	cfg := Config{Budget: Budget{MaxInFlight: 1}, Classes: []limit.Class{{Name: "bulk", Limit: 1}}}
	inEachMode(t, cfg, func(w *world) {
		t := w.t
		rec := newOutcomes()
		l := &drivenLimiter{limit: 1, next: 1}
		a := &hostPeer{id: "A"}
		require.NoError(t, w.s.ConnectWith(a, peer.Options{Limiter: l}))
		w.peers["A"] = a
		var ids []receiver.RequestID
		send := func() {
			t.Helper()
			_, err := w.s.ScheduleWith(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0, offer.Options{Class: "bulk"})
			require.NoError(t, err)
			w.settle()
		}

		// A first request is answered in 30ms: the peer's RTT.
		send()
		w.advance(30 * time.Millisecond)
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
		w.settle()

		// The second is refused after 2ms, while a third sender waits for
		// the channel, the budget and the class.
		send()
		waiting := &script{onOffer: sendFirst(rec, time.Second, &ids)}
		_, err := w.s.ScheduleWith(waiting, 0, offer.Options{Class: "bulk"})
		require.NoError(t, err)
		w.settle()
		require.Zero(t, waiting.offerCount())
		w.advance(2 * time.Millisecond)
		require.NoError(t, w.s.Refuse("A", ids[1]))
		w.settle()

		require.Equal(t, []string{"failure from A: refused"}, rec.of(ids[1]))
		require.Equal(t, 1, waiting.offerCount(), "the channel, the budget and the class went to the waiting sender")
		require.Len(t, ids, 3)
		require.Equal(t, []ClassUsage{{Name: "bulk", Limit: 1, InFlight: 1}}, w.s.ClassUsage(nil), "the refused request released its class; the next one booked it")
		require.Equal(t, limit.Sample{Outcome: limit.Failed, RTT: 2 * time.Millisecond, InFlight: 1, Now: 32 * time.Millisecond},
			l.seen()[1], "the limiter sees a failure, with the time from send to refusal")
		require.Equal(t, 30*time.Millisecond, w.usage("A").RTT, "a refusal is no response time")

		st := w.s.Stats()
		require.Equal(t, uint64(1), st.Refused)
		require.Equal(t, uint64(1), st.Succeeded)
		require.Zero(t, st.TimedOut)
		require.Equal(t, uint64(3), st.Sent)
		require.Equal(t, 1, st.RequestsInFlight)

		// A withdrawn request's refusal still ends it and reopens its
		// channel, and the limiter still hears of it.
		require.True(t, w.s.WithdrawReceiver(ids[2]))
		require.NoError(t, w.s.Refuse("A", ids[2]))
		w.settle()
		require.Empty(t, rec.of(ids[2]))
		st = w.s.Stats()
		require.Equal(t, uint64(1), st.Refused, "counted as a withdrawn request's end, as a response would be")
		require.Equal(t, uint64(1), st.WithdrawnDone)
		require.Equal(t, 1, st.ChannelsOpen)
		require.Len(t, l.seen(), 3)
	})
}

// TestRefuseDropsWhatDeliverDrops: a refusal is bound to its request as a
// response is (promise 8), with the same errors and counts, and it is the
// peer's one answer.
func TestRefuseDropsWhatDeliverDrops(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 3)
		w.connect("B", 1)
		refused := requestOn(t, w, rec, "A")
		answered := requestOn(t, w, rec, "A")
		expiring := requestOn(t, w, rec, "A")
		var notified bool
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			require.NoError(t, o.Notify(0, "n", time.Hour))
			notified = true
		}}, 0)
		require.NoError(t, err)
		require.True(t, notified)

		require.ErrorIs(t, w.s.Refuse("B", refused), receiver.ErrWrongPeer)
		require.ErrorIs(t, w.s.Refuse("nobody", refused), receiver.ErrWrongPeer)
		for _, id := range []receiver.RequestID{0, refused + 1<<40, 999999, refused + 1<<32} {
			require.ErrorIs(t, w.s.Refuse("A", id), receiver.ErrUnknownRequest, "id %#x", uint64(id))
		}
		require.Zero(t, rec.total(), "nothing reached a receiver")
		require.Equal(t, 3, w.s.Stats().RequestsInFlight)

		require.NoError(t, w.s.Refuse("A", refused))
		require.ErrorIs(t, w.s.Refuse("A", refused), receiver.ErrDuplicateResponse)
		require.ErrorIs(t, w.s.Deliver("A", refused, "after all"), receiver.ErrDuplicateResponse)
		require.NoError(t, w.s.Deliver("A", answered, "yes"))
		require.ErrorIs(t, w.s.Refuse("A", answered), receiver.ErrDuplicateResponse)

		// At its deadline a refusal is late, even before the timer runs.
		w.holdTimers()
		w.advance(time.Second)
		require.ErrorIs(t, w.s.Refuse("A", expiring), receiver.ErrLateResponse)

		require.Equal(t, []string{"failure from A: refused"}, rec.of(refused))
		require.Equal(t, []string{"response from A: yes"}, rec.of(answered))
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(expiring))
		st := w.s.Stats()
		require.Equal(t, uint64(2), st.WrongPeer)
		require.Equal(t, uint64(4), st.Unknown)
		require.Equal(t, uint64(3), st.Duplicate)
		require.Equal(t, uint64(1), st.Late)
		require.Equal(t, uint64(1), st.Refused)
		require.Equal(t, uint64(1), st.Succeeded)
		require.Equal(t, uint64(1), st.TimedOut)
		require.Equal(t, 3, w.usage("A").Open)
		require.Equal(t, 1, w.usage("B").Closed, "the notification, on B, still holds its channel")

		w.s.Stop()
		require.ErrorIs(t, w.s.Refuse("A", refused), ErrStopped)
		require.Equal(t, st.Duplicate, w.s.Stats().Duplicate, "after Stop nothing is counted")
	})
}

// TestRefuseWhileTheHostSends: a refusal that comes before the host's Send
// has returned is held back, as an early response is: the receiver hears of
// it once Send returns, the channel stays closed until then, and no limiter
// sees it. If Send then fails, the refusal goes with the request.
func TestRefuseWhileTheHostSends(t *testing.T) {
	for _, sendFails := range []bool{false, true} {
		t.Run(map[bool]string{false: "send-succeeds", true: "send-fails"}[sendFails], func(t *testing.T) {
			inEachMode(t, Config{}, func(w *world) {
				t := w.t
				rec := newOutcomes()
				l := &drivenLimiter{limit: 1, next: 1}
				a := &hostPeer{id: "A"}
				require.NoError(t, w.s.ConnectWith(a, peer.Options{Limiter: l}))
				w.peers["A"] = a
				var refuseErr error
				a.onSend = func(id uint64, _ any) {
					refuseErr = w.s.Refuse("A", receiver.RequestID(id))
					require.Equal(t, 1, w.usage("A").Closed, "the request holds its channel until Send returns")
				}
				if sendFails {
					a.fail = errRefused
				}
				var ids []receiver.RequestID
				_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
				require.NoError(t, err)
				w.settle()

				require.NoError(t, refuseErr, "accepted, and held back")
				st := w.s.Stats()
				if sendFails {
					require.Empty(t, ids)
					require.Zero(t, rec.total(), "a failed send reaches no receiver")
					require.Zero(t, st.Refused)
				} else {
					require.Equal(t, []string{"failure from A: refused"}, rec.of(ids[0]))
					require.Equal(t, uint64(1), st.Refused)
					require.ErrorIs(t, w.s.Refuse("A", ids[0]), receiver.ErrDuplicateResponse)
				}
				require.Zero(t, st.RequestsInFlight)
				require.Equal(t, 1, w.usage("A").Open)
				require.Empty(t, l.seen(), "an outcome that came during the send is shown to no limiter")
			})
		})
	}
}

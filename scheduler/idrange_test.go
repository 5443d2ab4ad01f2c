package scheduler

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// The tests of promise 20: request IDs drawn from a configured range, here
// with ranges small enough to wrap within a test.

// sendOneTo schedules a sender that sends one request to peer to with rec
// and timeout, and returns the ID the scheduler gave it (which must be the
// ID the host was asked to send).
func sendOneTo(w *world, to peer.ID, rec receiver.Receiver, timeout time.Duration) peer.RequestID {
	w.t.Helper()
	var ids []peer.RequestID
	_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, timeout, &ids, to)}, 0)
	require.NoError(w.t, err)
	w.settle() // in either callback mode
	require.Len(w.t, ids, 1, "the request was sent")
	sent := w.peers[to].sends()
	require.Equal(w.t, ids[0], sent[len(sent)-1].requestID, "the host sends the ID the receiver is told")
	return ids[0]
}

func TestPromise20_RangeIsCheckedAgainstTheCap(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"Lo zero", Config{RequestIDs: receiver.IDRange{Lo: 0, Hi: 10}}},
		{"empty", Config{RequestIDs: receiver.IDRange{Lo: 10, Hi: 10}}},
		{"reversed", Config{RequestIDs: receiver.IDRange{Lo: 10, Hi: 5}}},
		{"cap above the range", Config{RequestIDs: receiver.IDRange{Lo: 1, Hi: 4}, MaxRequests: 4}},
		{"cap above 32 bits of IDs", Config{RequestIDs: receiver.IDRange{Lo: 1 << 24, Hi: 1<<24 + 1000}, MaxRequests: 1001}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := New(c.cfg)
			require.ErrorIs(t, err, ErrBadConfig)
			require.Nil(t, s)
		})
	}
	_, err := New(Config{RequestIDs: receiver.IDRange{Lo: 0, Hi: 10}})
	require.ErrorIs(t, err, receiver.ErrBadIDRange, "the error says what is wrong")

	for _, cfg := range []Config{
		{RequestIDs: receiver.IDRange{Lo: 1, Hi: 4}, MaxRequests: 3},
		{RequestIDs: receiver.IDRange{Lo: 1 << 24, Hi: 1 << 32}},
		{RequestIDs: receiver.IDRange{Lo: 1, Hi: math.MaxUint64}, MaxRequests: MaxRequestsLimit},
	} {
		s, err := New(cfg)
		require.NoError(t, err, "%+v", cfg)
		s.Stop()
	}
}

// TestPromise20_CapDefaultsToTheRangeSize: with a range smaller than
// DefaultMaxRequests and no MaxRequests, the cap is the range's size, so
// every ID may be outstanding at once and the next request gets
// receiver.ErrTooManyRequests, not a shared ID.
func TestPromise20_CapDefaultsToTheRangeSize(t *testing.T) {
	inBubble(t, Config{RequestIDs: receiver.IDRange{Lo: 40, Hi: 43}}, func(w *world) {
		w.connect("A", 5)
		var ids []peer.RequestID
		var errs []error
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			for i := range o.Size() {
				id, e := o.Request(i, "x", newOutcomes(), time.Second)
				ids, errs = append(ids, id), append(errs, e)
			}
		}}, 0)
		require.NoError(t, err)
		require.Len(t, errs, 5)
		require.NoError(t, errors.Join(errs[:3]...))
		require.ErrorIs(t, errs[3], receiver.ErrTooManyRequests)
		require.ErrorIs(t, errs[4], receiver.ErrTooManyRequests)
		require.Equal(t, []peer.RequestID{40, 41, 42}, ids[:3])
	})
}

// TestPromise20_WrapAroundAtTheTop: IDs go up to the last of the range, the
// top of 32 bits here, and wrap to its first; every one fits a uint32.
func TestPromise20_WrapAroundAtTheTop(t *testing.T) {
	top := peer.RequestID(math.MaxUint32)
	inBubble(t, Config{RequestIDs: receiver.IDRange{Lo: 1<<32 - 3, Hi: 1 << 32}}, func(w *world) {
		w.connect("A", 1)
		rec := newOutcomes()
		var got []peer.RequestID
		for range 7 {
			id := sendOneTo(w, "A", rec, time.Second)
			got = append(got, id)
			require.NoError(t, w.s.Deliver("A", id, "ok"))
		}
		require.Equal(t, []peer.RequestID{top - 2, top - 1, top, top - 2, top - 1, top, top - 2}, got)
		for _, m := range w.peers["A"].sends() {
			require.LessOrEqual(t, m.requestID, peer.RequestID(math.MaxUint32))
		}
		require.Equal(t, uint64(7), w.s.Stats().Succeeded)
	})
}

// TestPromise20_NoTwoOutstandingRequestsShareAnID: one request stays out
// while others come and go for many laps of a four-ID range, some answered
// and some timing out; no ID is ever issued while a request holds it, and
// each lap issues every free ID once before any comes back.
func TestPromise20_NoTwoOutstandingRequestsShareAnID(t *testing.T) {
	inBubble(t, Config{RequestIDs: receiver.IDRange{Lo: 1000, Hi: 1004}}, func(w *world) {
		w.connect("A", 4)
		rec := newOutcomes()
		long := sendOneTo(w, "A", rec, time.Hour)
		outstanding := map[peer.RequestID]bool{long: true}
		var order []peer.RequestID
		for step := range 60 {
			// Two at a time, so IDs are reused while others are out.
			a := sendOneTo(w, "A", rec, 10*time.Millisecond)
			b := sendOneTo(w, "A", rec, 10*time.Millisecond)
			for _, id := range []peer.RequestID{a, b} {
				require.False(t, outstanding[id], "step %d: ID %d issued while outstanding", step, id)
				outstanding[id] = true
				order = append(order, id)
			}
			require.Len(t, outstanding, w.s.Stats().RequestsInFlight)
			if step%2 == 0 {
				require.NoError(t, w.s.Deliver("A", a, "ok"))
				require.NoError(t, w.s.Deliver("A", b, "ok"))
			} else {
				w.advance(10 * time.Millisecond) // both time out
			}
			delete(outstanding, a)
			delete(outstanding, b)
		}
		// The three free IDs come round in a fixed rotation.
		for i := 3; i < len(order); i++ {
			require.Equal(t, order[i-3], order[i], "position %d", i)
		}
		require.NotContains(t, order, long)
		require.NoError(t, w.s.Deliver("A", long, "at last"))
		require.Equal(t, []string{"response from A: at last"}, rec.of(long))
	})
}

// TestPromise20_WithoutARangeNoIDIsIssuedTwice: with no Config.RequestIDs,
// requests that come and go over two channels for a thousand laps (so
// the table's slots are reused again and again), answered, timed out and
// withdrawn, never get an ID issued before; another answer to the last
// lap's request is dropped (a duplicate, or late if it timed out), never
// taken by the request now in its slot.
func TestPromise20_WithoutARangeNoIDIsIssuedTwice(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 2)
		rec := newOutcomes()
		issued := map[peer.RequestID]bool{}
		var last peer.RequestID
		var lastEnded error // what a second answer to last is: a duplicate, or late
		for step := range 1000 {
			a := sendOneTo(w, "A", rec, 10*time.Millisecond)
			b := sendOneTo(w, "A", rec, 10*time.Millisecond)
			for _, id := range []peer.RequestID{a, b} {
				require.False(t, issued[id], "step %d: ID %d issued twice", step, id)
				issued[id] = true
			}
			switch step % 3 {
			case 0:
				require.NoError(t, w.s.Deliver("A", a, "ok"))
				require.NoError(t, w.s.Deliver("A", b, "ok"))
			case 1:
				w.advance(10 * time.Millisecond) // both time out
			case 2:
				require.True(t, w.s.WithdrawReceiver(a))
				require.NoError(t, w.s.Deliver("A", a, "unheard"))
				require.NoError(t, w.s.Deliver("A", b, "ok"))
			}
			if last != 0 {
				// The previous step's request, whose slot is now reused.
				require.ErrorIs(t, w.s.Deliver("A", last, "again"), lastEnded)
			}
			last, lastEnded = a, receiver.ErrDuplicateResponse
			if step%3 == 1 {
				lastEnded = receiver.ErrLateResponse
			}
		}
		require.Len(t, issued, 2000)
		require.Zero(t, w.s.Stats().RequestsInFlight)
	})
}

// TestPromise20_ResponsesToAReusedIDNeverCompleteTheWrongRequest: request
// ID x times out on peer A. While x is unused its late response is dropped
// as late; once the range wraps and x names a new request to B, A's late
// response and C's spoof are dropped as from the wrong peer, the new request
// still waits, and B's answer completes it with B's response.
func TestPromise20_ResponsesToAReusedIDNeverCompleteTheWrongRequest(t *testing.T) {
	inBubble(t, Config{RequestIDs: receiver.IDRange{Lo: 7, Hi: 9}}, func(w *world) {
		w.connect("A", 1)
		w.connect("B", 1)
		w.connect("C", 1)
		first := newOutcomes()
		x := sendOneTo(w, "A", first, time.Second)
		w.advance(time.Second)
		require.Equal(t, []string{"failure from A: timeout"}, first.of(x))
		require.ErrorIs(t, w.s.Deliver("A", x, "A's late answer"), receiver.ErrLateResponse)

		// The other ID, then x again: the cursor has wrapped.
		other := newOutcomes()
		y := sendOneTo(w, "B", other, time.Minute)
		require.NotEqual(t, x, y)
		require.NoError(t, w.s.Deliver("B", y, "y"))
		second := newOutcomes()
		reused := sendOneTo(w, "B", second, time.Minute)
		require.Equal(t, x, reused, "the range has two IDs: x comes back")

		require.ErrorIs(t, w.s.Deliver("A", x, "A's late answer"), receiver.ErrWrongPeer)
		require.ErrorIs(t, w.s.Deliver("C", x, "C's spoof"), receiver.ErrWrongPeer)
		require.Empty(t, second.of(x), "neither reached the new request")
		require.Equal(t, []string{"failure from A: timeout"}, first.of(x), "nor the old one again")
		require.Equal(t, 1, w.s.Stats().RequestsInFlight)

		require.NoError(t, w.s.Deliver("B", x, "B's answer"))
		require.Equal(t, []string{"response from B: B's answer"}, second.of(x))
		require.ErrorIs(t, w.s.Deliver("B", x, "B again"), receiver.ErrDuplicateResponse)
		require.Equal(t, []string{"failure from A: timeout"}, first.of(x))
		st := w.s.Stats()
		require.Equal(t, uint64(1), st.Late)
		require.Equal(t, uint64(2), st.WrongPeer)
		require.Equal(t, uint64(1), st.Duplicate)
	})
}

// TestPromise20_DisconnectAndStopReportRangedIDs: the IDs receivers are
// told on failure are the ranged ones they were given.
func TestPromise20_DisconnectAndStopReportRangedIDs(t *testing.T) {
	inBubble(t, Config{RequestIDs: receiver.IDRange{Lo: 1 << 24, Hi: 1 << 32}}, func(w *world) {
		w.connect("A", 1)
		w.connect("B", 1)
		rec := newOutcomes()
		a := sendOneTo(w, "A", rec, time.Minute)
		b := sendOneTo(w, "B", rec, time.Minute)
		require.Equal(t, []peer.RequestID{1 << 24, 1<<24 + 1}, []peer.RequestID{a, b})
		require.NoError(t, w.s.Disconnect("A"))
		require.Equal(t, []string{"failure from A: disconnected"}, rec.of(a))
		require.True(t, w.s.WithdrawReceiver(b))
		require.False(t, w.s.WithdrawReceiver(b))
		w.s.Stop()
		require.Empty(t, rec.of(b), "withdrawn")
	})
}

// TestPromise20_AnIDIsQuarantinedFromItsLastPeer: an ID is not issued
// again to the peer its last request went to until that request's
// deadline has passed by as long again as its timeout, so the peer's late
// answer to the old request cannot complete the new one (issue 24, item
// 4). With IDs 1 to 4: x (1) times out on A at 1s, and 2, 3 and 4 go to
// B. A's next request is not given 1, quarantined for A until 2s, but 2,
// last B's; A's late answer to x is late, and the new request waits for
// its own. From 2s on, 1 may go to A again.
func TestPromise20_AnIDIsQuarantinedFromItsLastPeer(t *testing.T) {
	inEachMode(t, Config{RequestIDs: receiver.IDRange{Lo: 1, Hi: 5}}, func(w *world) {
		w.connect("A", 1)
		w.connect("B", 1)
		rec := newOutcomes()
		x := sendOneTo(w, "A", rec, time.Second)
		require.Equal(t, peer.RequestID(1), x)
		w.advance(time.Second)
		w.settle()
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(x))
		for want := peer.RequestID(2); want <= 4; want++ {
			id := sendOneTo(w, "B", rec, time.Second)
			require.Equal(t, want, id)
			require.NoError(t, w.s.Deliver("B", id, "b"))
			w.settle()
		}

		next := newOutcomes()
		y := sendOneTo(w, "A", next, time.Second)
		require.Equal(t, peer.RequestID(2), y, "1 is quarantined for A; 2 last went to B")
		require.ErrorIs(t, w.s.Deliver("A", x, "A's late answer to x"), receiver.ErrLateResponse)
		w.settle()
		require.Empty(t, next.of(y), "the late answer completed nothing")
		require.NoError(t, w.s.Deliver("A", y, "y"))
		w.settle()
		require.Equal(t, []string{"response from A: y"}, next.of(y))

		// B's quarantines (until 2s) keep 3 and 4 from B but not from A;
		// at 2s, x's ends, and 1 may go to A again.
		w.advance(time.Second)
		for want := peer.RequestID(3); want <= 5; want++ {
			id := sendOneTo(w, "A", next, time.Second)
			require.Equal(t, (want-1)%4+1, id)
			require.NoError(t, w.s.Deliver("A", id, "a"))
			w.settle()
		}
		require.Zero(t, w.s.Stats().RequestIDsReusedEarly)
	})
}

// TestPromise20_ARangeTooSmallReusesAnIDEarlyAndCountsIt: with two IDs and
// one peer, both quarantined for it, the next request is given the next ID
// in order all the same, and Stats counts it: then, and only then, the
// peer's late answer to the ID's last request completes the new one.
func TestPromise20_ARangeTooSmallReusesAnIDEarlyAndCountsIt(t *testing.T) {
	inEachMode(t, Config{RequestIDs: receiver.IDRange{Lo: 1, Hi: 3}}, func(w *world) {
		w.connect("A", 1)
		old, next := newOutcomes(), newOutcomes()
		x := sendOneTo(w, "A", old, time.Second)
		w.advance(time.Second)
		y := sendOneTo(w, "A", old, time.Second)
		require.NoError(t, w.s.Deliver("A", y, "y"))
		w.settle()
		require.Zero(t, w.s.Stats().RequestIDsReusedEarly)

		reused := sendOneTo(w, "A", next, time.Second)
		require.Equal(t, x, reused)
		require.Equal(t, uint64(1), w.s.Stats().RequestIDsReusedEarly)
		require.NoError(t, w.s.Deliver("A", x, "A's late answer to x"))
		w.settle()
		require.Equal(t, []string{"response from A: A's late answer to x"}, next.of(x), "what the count warns of")
	})
}

package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// request schedules a sender that sends one request to the peer named to
// with the given timeout, and returns its ID; the peer must have an open
// channel (callbacks are inline, so the send is made before this returns).
func (w *world) request(to peer.ID, r receiver.Receiver, timeout time.Duration) peer.RequestID {
	w.t.Helper()
	var ids []peer.RequestID
	_, err := w.s.Schedule(&script{onOffer: sendFirst(r, timeout, &ids, to)}, 0)
	require.NoError(w.t, err)
	require.Len(w.t, ids, 1, "a request to %s", to)
	return ids[0]
}

// peerStats returns the PeerStats entry of the peer named id, and whether
// PeerStats lists it.
func (w *world) peerStats(id peer.ID) (PeerStats, bool) {
	for _, ps := range w.s.PeerStats(nil) {
		if ps.ID == id {
			return ps, true
		}
	}
	return PeerStats{}, false
}

// histogramOf returns the Histogram of the given response times, worked out
// from HistogramBounds alone.
func histogramOf(times ...time.Duration) Histogram {
	var h Histogram
	for _, d := range times {
		observeModel(&h, d)
	}
	return h
}

// TestPeerStatsCounts drives two peers through every way a message can end
// and every way a response can be dropped, on a mock clock, and checks each
// peer's counters and response times exactly, and that they add up to
// Stats'.
func TestPeerStatsCounts(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		start := w.clock.Now()
		a := w.connect("a", 2)
		w.advance(time.Second)
		w.connect("b", 1)
		out := newOutcomes()

		// a answers after 3ms (bucket 6, at most 4ms) and after exactly
		// 1ms (bucket 4's bound).
		id1 := w.request("a", out, time.Minute)
		w.advance(3 * time.Millisecond)
		require.NoError(t, w.s.Deliver("a", id1, "one"))
		id2 := w.request("a", out, time.Minute)
		w.advance(time.Millisecond)
		require.NoError(t, w.s.Deliver("a", id2, "two"))
		require.ErrorIs(t, w.s.Deliver("a", id2, "again"), receiver.ErrDuplicateResponse) // a's duplicate

		// b times out, then answers late.
		id3 := w.request("b", out, 50*time.Millisecond)
		w.advance(50 * time.Millisecond)
		require.Equal(t, []string{"failure from b: timeout"}, out.of(id3))
		require.ErrorIs(t, w.s.Deliver("b", id3, "late"), receiver.ErrLateResponse) // b's late response

		// a refuses one, and b answers one of a's: the wrong peer.
		id4 := w.request("a", out, time.Minute)
		require.NoError(t, w.s.Refuse("a", id4))
		id5 := w.request("a", out, time.Minute)
		require.ErrorIs(t, w.s.Deliver("b", id5, "mine?"), receiver.ErrWrongPeer) // b's
		// A response from a peer that never connected counts for no peer.
		require.ErrorIs(t, w.s.Deliver("c", 12345, "who?"), receiver.ErrUnknownRequest)
		// And one naming no request, from a.
		require.ErrorIs(t, w.s.Deliver("a", 12345, "what?"), receiver.ErrUnknownRequest)

		// b is sent a notification; a's host refuses a send.
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) { require.NoError(t, o.Notify(0, "hello", time.Millisecond)) }}, 0)
		require.NoError(t, err)
		w.advance(time.Millisecond)
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		var refusedSends int
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			for i := range o.Len() {
				if c, _ := o.Channel(i); c.Peer == "a" {
					if _, err := o.Request(i, "x", out, time.Minute); err != nil {
						refusedSends++
					}
				}
			}
		}}, 0)
		require.NoError(t, err)
		require.Equal(t, 1, refusedSends)
		a.mu.Lock()
		a.fail = nil
		a.mu.Unlock()

		wantA := PeerStats{ID: "a", Connected: true, Since: start, Counters: Counters{
			Sent: 4, SendErrors: 1, Succeeded: 2, Refused: 1, Duplicate: 1, Unknown: 1,
			ResponseTimes: histogramOf(3*time.Millisecond, time.Millisecond)}}
		wantB := PeerStats{ID: "b", Connected: true, Since: start.Add(time.Second), Counters: Counters{
			Sent: 1, Notified: 1, TimedOut: 1, Late: 1, WrongPeer: 1}}
		require.Equal(t, []PeerStats{wantA, wantB}, w.s.PeerStats(nil))
		require.Equal(t, uint64(1), wantA.ResponseTimes.Cumulative[4]-wantA.ResponseTimes.Cumulative[3], "1ms: bucket 4")
		require.Equal(t, uint64(1), wantA.ResponseTimes.Cumulative[6]-wantA.ResponseTimes.Cumulative[5], "3ms: bucket 6")

		// a disconnects with id5 pending: it is kept, departed, with the
		// failure counted.
		require.NoError(t, w.s.Disconnect("a"))
		wantA.Connected, wantA.Disconnected = false, 1
		require.Equal(t, []PeerStats{wantA, wantB}, w.s.PeerStats(nil))

		st := w.s.Stats()
		require.Equal(t, Stats{Peers: 1, ChannelsOpen: 1, SendersWaiting: 1, SendersParked: 1, // the sender whose send failed waits on, parked
			Counters: Counters{Sent: 5, Notified: 1, SendErrors: 1, Succeeded: 2, TimedOut: 1, Refused: 1, Disconnected: 1,
				Late: 1, Unknown: 2, WrongPeer: 1, Duplicate: 1,
				ResponseTimes: wantA.ResponseTimes}}, st)
		checkCountsAddUp(t, w.s)
	})
}

// TestPeerStatsEarlyAnswer: a response that comes while the host's Send is
// still running is taken when Send returns, and its response time runs to
// then.
func TestPeerStatsEarlyAnswer(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		a := w.connect("a", 1)
		out := newOutcomes()
		a.onSend = func(requestID peer.RequestID, _ any) {
			w.clock.Add(time.Millisecond)
			require.NoError(t, w.s.Deliver("a", peer.RequestID(requestID), "early"))
			w.clock.Add(time.Millisecond) // Send returns 2ms after it began
		}
		id := w.request("a", out, time.Minute)
		require.Equal(t, []string{"response from a: early"}, out.of(id))
		ps, ok := w.peerStats("a")
		require.True(t, ok)
		require.Equal(t, histogramOf(2*time.Millisecond), ps.ResponseTimes)
		require.Equal(t, histogramOf(2*time.Millisecond), w.s.Stats().ResponseTimes)
	})
}

// TestPeerStatsDisconnectDuringSend: a request whose peer leaves while the
// host's Send runs fails when Send returns, and counts against the peer's
// kept counters, found by ID; with none kept, against no peer.
func TestPeerStatsDisconnectDuringSend(t *testing.T) {
	for _, keep := range []int{0, -1} {
		inBubble(t, Config{KeepDepartedPeers: keep}, func(w *world) {
			a := w.connect("a", 1)
			out := newOutcomes()
			a.onSend = func(peer.RequestID, any) { require.NoError(t, w.s.Disconnect("a")) }
			id := w.request("a", out, time.Minute)
			require.Equal(t, []string{"failure from a: disconnected"}, out.of(id))
			ps, ok := w.peerStats("a")
			if keep < 0 {
				require.False(t, ok, "no departed peer is kept")
			} else {
				require.True(t, ok)
				require.Equal(t, PeerStats{ID: "a", Since: w.clock.Now(), Counters: Counters{Sent: 1, Disconnected: 1}}, ps)
			}
			st := w.s.Stats()
			require.Equal(t, uint64(1), st.Sent)
			require.Equal(t, uint64(1), st.Disconnected)
			checkCountsAddUp(t, w.s)
		})
	}
}

// TestPeerStatsKeepDeparted: a departed peer's counters are kept, and go on
// when it reconnects, until more than KeepDepartedPeers peers departed
// after it; then they are forgotten, still counted in Stats, and a
// reconnection starts from zero with a later Since.
func TestPeerStatsKeepDeparted(t *testing.T) {
	inBubble(t, Config{KeepDepartedPeers: 1}, func(w *world) {
		out := newOutcomes()
		first := w.clock.Now()
		w.connect("a", 1)
		w.connect("b", 1)
		id := w.request("a", out, time.Minute)
		w.advance(time.Millisecond)
		require.NoError(t, w.s.Deliver("a", id, "ok"))
		require.NoError(t, w.s.Disconnect("a"))
		ps, ok := w.peerStats("a")
		require.True(t, ok)
		require.Equal(t, PeerStats{ID: "a", Since: first, Counters: Counters{Sent: 1, Succeeded: 1, ResponseTimes: histogramOf(time.Millisecond)}}, ps)

		// Back: its counters go on from where they were, Since unchanged.
		w.advance(time.Second)
		w.connect("a", 1)
		w.request("a", out, time.Minute)
		ps, _ = w.peerStats("a")
		require.Equal(t, PeerStats{ID: "a", Connected: true, Since: first, Counters: Counters{Sent: 2, Succeeded: 1, ResponseTimes: histogramOf(time.Millisecond)}}, ps)

		// Gone again, and b after it: only one departed peer is kept, the
		// later one.
		require.NoError(t, w.s.Disconnect("a"))
		require.NoError(t, w.s.Disconnect("b"))
		_, ok = w.peerStats("a")
		require.False(t, ok, "a is forgotten")
		ps, ok = w.peerStats("b")
		require.True(t, ok)
		require.False(t, ps.Connected)
		require.Equal(t, uint64(2), w.s.Stats().Sent, "Stats keeps a forgotten peer's counts")
		checkCountsAddUp(t, w.s)

		// a comes back and starts from zero.
		w.advance(time.Second)
		w.connect("a", 1)
		ps, _ = w.peerStats("a")
		require.Equal(t, PeerStats{ID: "a", Connected: true, Since: w.clock.Now()}, ps)
		require.True(t, ps.Since.After(first))
		checkCountsAddUp(t, w.s)
	})
}

// TestPeerStatsAppends: PeerStats appends to dst, keeping what it held, in
// ID order whatever the order of connection.
func TestPeerStatsAppends(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		for _, id := range []peer.ID{"d", "b", "e", "a", "c"} {
			w.connect(id, 1)
		}
		dst := w.s.PeerStats([]PeerStats{{ID: "kept"}})
		var ids []peer.ID
		for _, ps := range dst {
			ids = append(ids, ps.ID)
		}
		require.Equal(t, []peer.ID{"kept", "a", "b", "c", "d", "e"}, ids)
		again := w.s.PeerStats(dst[:0])
		require.Len(t, again, 5)
		require.Equal(t, &dst[0], &again[0], "the memory is reused")
	})
}

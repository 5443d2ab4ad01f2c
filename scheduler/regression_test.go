package scheduler

// Each test here pins a defect that FuzzScheduler found: it failed before the
// fix and passes after it. The fuzzer's own minimised input is kept beside it
// in testdata/fuzz/FuzzScheduler.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// A request whose peer disconnects while the host is still sending it fails
// with Disconnected when the send returns; its receiver must be told which
// peer the request went to, as for every other failure, not "".
func TestRegression_DisconnectWhileSendingNamesThePeer(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		a := w.connect("A", 1)
		a.onSend = func(uint64, any) { require.NoError(t, w.s.Disconnect("A")) }
		var id receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			var err error
			id, err = o.Request(0, "x", rec, time.Second)
			require.NoError(t, err)
		}}, 0)
		require.NoError(t, err)
		require.Equal(t, []string{"failure from A: disconnected"}, rec.of(id))
	})
}

// A sender that has sent during its offer has left the queue by that send
// (promise 1), even though the offer is still open. Withdrawing it then, from
// inside its own callback or from a callback it causes, must find nothing:
// it cannot leave twice. Its offer stays open for the rest of its size.
func TestRegression_WithdrawAfterSendingInTheOfferFindsNothing(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ticket offer.Ticket
		var withdrawn []bool
		snd := &script{onOffer: func(o offer.Offer) {
			_, err := o.Request(0, "x", rec, time.Second)
			require.NoError(t, err)
			withdrawn = append(withdrawn, w.s.WithdrawSender(ticket))
			_, err = o.Request(1, "y", rec, time.Second)
			require.NoError(t, err, "the offer is still open")
		}}
		ticket, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		w.connect("A", 2)
		require.Equal(t, []bool{false}, withdrawn, "it had already left by sending")
		require.Equal(t, 1, snd.offerCount())
		require.Zero(t, w.s.Stats().SendersWaiting)
		require.Zero(t, w.s.Stats().ChannelsOpen)
		require.False(t, w.s.WithdrawSender(ticket))
		w.s.Stop()
		require.Zero(t, snd.discards)
	})
}

// A request that an event ends while the host is still sending it is ended:
// its outcome is only held back until the send returns. A response to it is
// late (or a duplicate), as it would be a moment later, whoever sends it; in
// particular the peer it was sent to is not "the wrong peer" because it
// disconnected before answering.
func TestRegression_ResponseToARequestEndedWhileSendingIsLate(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		a := w.connect("A", 2)
		w.connect("B", 1)
		var delivered []error
		// The first request: A disconnects, then answers.
		a.onSend = func(id uint64, _ any) {
			require.NoError(t, w.s.Disconnect("A"))
			delivered = append(delivered, w.s.Deliver("A", receiver.RequestID(id), "after disconnect"))
		}
		var ids []receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids, "A")}, 0)
		require.NoError(t, err)
		// The second, to A connected again: it times out, then B and A answer.
		a = w.connect("A", 1)
		a.onSend = func(id uint64, _ any) {
			w.advance(time.Second)
			delivered = append(delivered,
				w.s.Deliver("B", receiver.RequestID(id), "from B"),
				w.s.Deliver("A", receiver.RequestID(id), "from A"))
		}
		_, err = w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids, "A")}, 0)
		require.NoError(t, err)
		require.Len(t, ids, 2)
		require.Len(t, delivered, 3)
		for i, err := range delivered {
			require.ErrorIs(t, err, receiver.ErrLateResponse, "response %d", i)
		}
		require.Equal(t, []string{"failure from A: disconnected"}, rec.of(ids[0]))
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(ids[1]))
		st := w.s.Stats()
		require.Equal(t, uint64(3), st.Late)
		require.Zero(t, st.WrongPeer)
	})
}

// The first event to end a request that is being sent decides its outcome;
// Stop, coming after, must not replace it. Above all, a response Deliver has
// accepted (returned nil for) must reach the receiver, as it does when the
// peer disconnects instead of the scheduler stopping.
func TestRegression_StopWhileSendingKeepsTheOutcomeAlreadyHeld(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  func(w *world, id receiver.RequestID) // the event before Stop, during the send
		want   string
		counts func(st Stats) uint64
	}{
		{"an accepted response", func(w *world, id receiver.RequestID) {
			require.NoError(t, w.s.Deliver("A", id, "early"))
		}, "response from A: early", func(st Stats) uint64 { return st.Succeeded }},
		{"a timeout", func(w *world, id receiver.RequestID) {
			w.advance(time.Second)
		}, "failure from A: timeout", func(st Stats) uint64 { return st.TimedOut }},
		{"an accepted refusal", func(w *world, id receiver.RequestID) {
			require.NoError(t, w.s.Refuse("A", id))
		}, "failure from A: refused", func(st Stats) uint64 { return st.Refused }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inBubble(t, Config{}, func(w *world) {
				rec := newOutcomes()
				a := w.connect("A", 1)
				a.onSend = func(id uint64, _ any) {
					tc.first(w, receiver.RequestID(id))
					w.s.Stop()
				}
				var ids []receiver.RequestID
				_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
				require.NoError(t, err)
				require.Equal(t, []string{tc.want}, rec.of(ids[0]))
				st := w.s.Stats()
				require.Equal(t, uint64(1), tc.counts(st))
				require.Zero(t, st.ShutDown)
			})
		})
	}
}

// A response that comes after its request timed out is late, even once the
// request's slot in the table has gone to a newer request (the next one
// takes it at once). It was counted as a response to an unknown request, so
// under load nearly every late response was, and logged as a warning.
func TestRegression_LateResponseAfterTheSlotIsReusedIsLate(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 1)
		old := requestOn(t, w, newOutcomes())
		w.advance(time.Second) // it times out; its slot is free
		answered := requestOn(t, w, newOutcomes())
		require.Equal(t, uint32(old), uint32(answered), "the new request took the old one's slot")
		require.NoError(t, w.s.Deliver("A", answered, "ok"))
		requestOn(t, w, newOutcomes()) // and the slot moves on again

		require.ErrorIs(t, w.s.Deliver("A", old, "late"), receiver.ErrLateResponse)
		// The slot remembers how the request it served just before its
		// current one ended: a second answer to that one is a duplicate.
		require.ErrorIs(t, w.s.Deliver("A", answered, "again"), receiver.ErrDuplicateResponse)
		require.ErrorIs(t, w.s.Deliver("A", answered+2<<32, "never issued"), receiver.ErrUnknownRequest)
		st := w.s.Stats()
		require.Equal(t, uint64(1), st.Late)
		require.Equal(t, uint64(1), st.Duplicate)
		require.Equal(t, uint64(1), st.Unknown)
	})
}

// A peer whose requests only ever time out was ranked as if it had never
// been measured (response time 0), ahead of every peer that answers, so
// offers kept leading with it. A timeout now counts as a response-time
// sample of at least the timeout. Reported by the fetch, which had to work
// around it.
func TestRegression_APeerThatOnlyTimesOutIsNotOfferedFirst(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("a-silent", 1)
		w.connect("b-steady", 1)
		rec := newOutcomes()
		silent := requestOn(t, w, rec, "a-silent")
		steady := requestOn(t, w, rec, "b-steady")
		w.advance(10 * time.Millisecond)
		require.NoError(t, w.s.Deliver("b-steady", steady, "answer"))
		w.advance(time.Second)
		require.Equal(t, []string{"failure from a-silent: timeout"}, rec.of(silent))

		first := &script{}
		_, err := w.s.Schedule(first, 0)
		require.NoError(t, err)
		require.Equal(t, []peer.ID{"b-steady", "a-silent"}, first.offers[0].channels,
			"the peer that answered comes first; the silent one's response time is at least its timeout")
		for _, u := range w.s.PeerUsage(nil) {
			if u.ID == "a-silent" {
				require.Equal(t, time.Second, u.RTT)
			}
		}
	})
}

// A notification whose peer disconnects while the host is still sending it
// holds no channel: the peer's channels left with it. When the next peer to
// connect took the same pool slot, the notification used to be recorded
// under that slot, and when its digest time passed it reopened a channel of
// the new peer that a request of the new peer was holding.
func TestRegression_NotificationForAGonePeerHoldsNoChannelOfItsSuccessor(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		a := w.connect("A", 1)
		a.onSend = func(uint64, any) { require.NoError(t, w.s.Disconnect("A")) }
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			require.NoError(t, o.Notify(0, "news", 5*time.Millisecond))
		}}, 0)
		require.NoError(t, err)

		w.connect("B", 1) // takes A's slot in the pool
		var id receiver.RequestID
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			id, err = o.Request(0, "x", rec, time.Hour)
			require.NoError(t, err)
		}}, 0)
		require.NoError(t, err)
		require.NotZero(t, id)

		w.advance(5 * time.Millisecond) // the notification's digest time
		require.Equal(t, peer.Usage{ID: "B", Channels: 1, Open: 0, Closed: 1, Limit: 1}, w.usage("B"),
			"B's only channel is still held by its request")
		w.checkChannels()
	})
}

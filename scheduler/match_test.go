package scheduler

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
)

// These tests pin how waiting senders are matched to channels (issue 13
// §2): a sender that sent nothing is parked until it asks again (Reoffer),
// and a sender's wants (offer.Options) decide which channels it is offered
// and when.

// TestParkedSendersAreNotCalledOnOpenings: senders that declined are not
// offered anything again, however many channels open; each was offered
// once. Stats counts them.
func TestParkedSendersAreNotCalledOnOpenings(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		decliners := make([]*script, 50)
		for i := range decliners {
			decliners[i] = &script{}
			_, err := w.s.Schedule(decliners[i], 0)
			require.NoError(t, err)
		}
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 1) // each decliner is offered A in turn, and declines
		for _, d := range decliners {
			require.Equal(t, 1, d.offerCount())
		}
		require.Equal(t, 50, w.s.Stats().SendersParked)
		for range 100 {
			_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
			require.NoError(t, err)
			require.NoError(t, w.s.Deliver("A", ids[len(ids)-1], "ok"))
		}
		w.connect("B", 3)
		require.Len(t, ids, 100, "a sender that sends gets every opening")
		for _, d := range decliners {
			require.Equal(t, 1, d.offerCount(), "parked: not offered again")
		}
		st := w.s.Stats()
		require.Equal(t, 50, st.SendersWaiting)
		require.Equal(t, 50, st.SendersParked)
		require.Equal(t, 4, st.ChannelsOpen)
	})
}

// TestReofferKeepsThePlace: parked senders that ask again go back to their
// places, first come first served within a priority, whatever order they
// ask in, ahead of senders that came after them; a Reoffer from inside
// OnOffer gets the sender a new offer at once; one while its send is in
// the host's hands keeps it from being parked if the send fails.
func TestReofferKeepsThePlace(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		var order []string
		declineOnce := func(name string) *script {
			return &script{name: name, onOffer: func(o offer.Offer) {
				order = append(order, name)
				if slices.Contains(order[:len(order)-1], name) {
					id, err := o.Request(0, name, rec, time.Hour)
					require.NoError(t, err)
					ids = append(ids, id)
				}
			}}
		}
		w.connect("A", 1)
		tickets := map[string]offer.Ticket{}
		for _, name := range []string{"first", "second", "third"} {
			tk, err := w.s.Schedule(declineOnce(name), 0)
			require.NoError(t, err)
			tickets[name] = tk
		}
		require.Equal(t, []string{"first", "second", "third"}, order)
		hog := &script{onOffer: sendFirst(rec, time.Hour, &ids)}
		_, err := w.s.Schedule(hog, 0)
		require.NoError(t, err)
		later := declineOnce("later")
		_, err = w.s.Schedule(later, 0) // waits: A is closed
		require.NoError(t, err)
		for _, name := range []string{"third", "first", "second"} {
			require.True(t, w.s.Reoffer(tickets[name]))
		}
		require.Zero(t, w.s.Stats().SendersParked)
		for range 4 {
			require.NoError(t, w.s.Deliver("A", ids[len(ids)-1], "ok"))
		}
		require.Equal(t, []string{"first", "second", "third", "first", "second", "third", "later"}, order,
			"each asked again in its place, ahead of later; later then declined")

		// Asking again from inside the offer it declines.
		asked := 0
		var askTicket offer.Ticket
		asker := &script{onOffer: func(o offer.Offer) {
			if asked == 0 {
				asked++
				require.True(t, w.s.Reoffer(askTicket))
				return
			}
			id, err := o.Request(0, "asker", rec, time.Hour)
			require.NoError(t, err)
			ids = append(ids, id)
		}}
		_, err = w.s.Schedule(&script{onOffer: sendFirst(rec, time.Hour, &ids)}, 0) // takes A
		require.NoError(t, err)
		askTicket, err = w.s.Schedule(asker, 0)
		require.NoError(t, err)
		require.Zero(t, asker.offerCount())
		require.NoError(t, w.s.Deliver("A", ids[len(ids)-1], "ok"))
		require.Equal(t, 2, asker.offerCount(), "declined and asked again: offered again at once")
		require.Equal(t, 1, w.s.Stats().SendersParked, "only later is parked")
		require.False(t, w.s.Reoffer(askTicket), "it sent: it has left")
		require.False(t, w.s.Reoffer(0))
	})
}

// TestWantsAreHonoured: a sender is never offered a channel of a peer it
// avoids, only channels of its Only peers, and never fewer than
// MinChannels; until the open channels meet its wants it is passed over,
// keeping its place, and it is offered channels as soon as they do (the
// peer connects, a message of its ends, its limit rises, a send that took
// its channel fails).
func TestWantsAreHonoured(t *testing.T) {
	// wanting records the channels of each offer and sends on the first.
	wanting := func(rec *outcomes, ids *[]peer.RequestID) *script {
		return &script{onOffer: sendFirst(rec, time.Hour, ids)}
	}
	schedule := func(w *world, snd offer.Sender, priority int, opts offer.Options) offer.Ticket {
		t.Helper()
		tk, err := w.s.ScheduleWith(snd, priority, opts)
		require.NoError(t, err)
		return tk
	}
	t.Run("avoid", func(t *testing.T) {
		inBubble(t, Config{}, func(w *world) {
			rec := newOutcomes()
			var ids []peer.RequestID
			w.connect("A", 3)
			retry := wanting(rec, &ids)
			schedule(w, retry, 0, offer.Options{Avoid: []peer.ID{"A"}})
			require.Zero(t, retry.offerCount(), "A is avoided: nothing to offer")
			plain := wanting(rec, &ids)
			schedule(w, plain, 0, offer.Options{})
			require.Equal(t, 1, plain.offerCount(), "passed over for the sender behind it")
			w.connect("B", 2)
			require.Equal(t, 1, retry.offerCount(), "offered as soon as B connects")
			require.Equal(t, []peer.ID{"B", "B"}, retry.offers[0].channels, "only B's channels, though A has two open")
		})
	})
	t.Run("only", func(t *testing.T) {
		inBubble(t, Config{}, func(w *world) {
			rec := newOutcomes()
			var ids []peer.RequestID
			w.connect("A", 2)
			b := w.connect("B", 1)
			w.connect("C", 1)
			hog := wanting(rec, &ids)
			schedule(w, hog, 0, offer.Options{Only: []peer.ID{"B"}})
			require.Equal(t, []peer.ID{"B"}, hog.offers[0].channels)
			pinned := wanting(rec, &ids)
			schedule(w, pinned, 5, offer.Options{Only: []peer.ID{"B", "D"}})
			require.Zero(t, pinned.offerCount(), "B is busy and D is not connected: it waits")
			plain := wanting(rec, &ids)
			schedule(w, plain, 0, offer.Options{})
			require.Equal(t, 1, plain.offerCount(), "a lower priority goes while it waits")

			// B's channel reopens: the pinned sender goes first, and its
			// send fails.
			b.mu.Lock()
			b.fail = errRefused
			b.mu.Unlock()
			require.NoError(t, w.s.Deliver("B", ids[0], "ok"))
			require.Equal(t, 1, pinned.offerCount(), "B reopened: offered")
			require.Equal(t, []peer.ID{"B"}, pinned.offers[0].channels)
			require.Equal(t, 1, w.s.Stats().SendersParked, "its send failed: parked")
			b.mu.Lock()
			b.fail = nil
			b.mu.Unlock()

			// D connects: the parked sender is not woken by it.
			w.connect("D", 1)
			require.Equal(t, 1, pinned.offerCount())
		})
	})
	t.Run("a failed send puts the channel back", func(t *testing.T) {
		inBubble(t, Config{}, func(w *world) {
			rec := newOutcomes()
			var ids []peer.RequestID
			w.connect("A", 1)
			_, inSend, finishSend := w.connectBlocking("B", true)
			done := make(chan struct{})
			holder := &script{onOffer: func(o offer.Offer) {
				for i := range o.Len() {
					if c, _ := o.Channel(i); c.Peer == "B" {
						go func() {
							defer close(done)
							_, err := o.Request(i, "x", rec, time.Hour)
							require.ErrorIs(t, err, errRefused)
						}()
						<-inSend // the send outlives the offer
						return
					}
				}
			}}
			_, err := w.s.Schedule(holder, 5)
			require.NoError(t, err)
			pinned := wanting(rec, &ids)
			schedule(w, pinned, 0, offer.Options{Only: []peer.ID{"B"}})
			require.Zero(t, pinned.offerCount(), "B's channel is taken by the send in progress; A is not wanted")
			close(finishSend)
			<-done
			require.Equal(t, 1, pinned.offerCount(), "the failed send gave B's channel back, and the pinned sender was offered it")
			require.Equal(t, []peer.ID{"B"}, pinned.offers[0].channels)
		})
	})
	t.Run("min channels", func(t *testing.T) {
		inBubble(t, Config{}, func(w *world) {
			rec := newOutcomes()
			var ids []peer.RequestID
			w.connect("A", 1)
			chooser := wanting(rec, &ids)
			schedule(w, chooser, 0, offer.Options{MinChannels: 3, Avoid: []peer.ID{"C"}})
			w.connect("B", 1)
			w.connect("C", 1)
			require.Zero(t, chooser.offerCount(), "two it may use are open, and C, which it avoids")
			w.connect("D", 1)
			require.Equal(t, 1, chooser.offerCount())
			require.Equal(t, []peer.ID{"A", "B", "D"}, sortedIDs(chooser.offers[0].channels))
			require.Equal(t, 3, chooser.offers[0].size, "alone, it may close all three")
		})
	})
	t.Run("limit rises", func(t *testing.T) {
		inBubble(t, Config{}, func(w *world) {
			rec := newOutcomes()
			var ids []peer.RequestID
			lim := &stepLimiter{limit: 1}
			require.NoError(t, w.s.ConnectWith(&hostPeer{id: "A"}, peer.Options{Limiter: lim}))
			first := wanting(rec, &ids)
			schedule(w, first, 0, offer.Options{})
			pair := wanting(rec, &ids)
			schedule(w, pair, 0, offer.Options{Only: []peer.ID{"A"}, MinChannels: 2})
			require.Zero(t, pair.offerCount(), "A's limit is 1")
			lim.limit = 3 // the answer raises A's limit: its channel reopens, and two more open
			require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
			require.Equal(t, 1, pair.offerCount())
			require.Len(t, pair.offers[0].channels, 3)
		})
	})
	t.Run("refused", func(t *testing.T) {
		inBubble(t, Config{MaxOfferChannels: 4}, func(w *world) {
			for _, opts := range []offer.Options{
				{MinChannels: -1},
				{MinChannels: 5},
				{Only: []peer.ID{"A", "A"}, Avoid: []peer.ID{"A"}},
			} {
				_, err := w.s.ScheduleWith(&script{}, 0, opts)
				require.ErrorIs(t, err, ErrBadWants, "%+v", opts)
			}
			require.Zero(t, w.s.Stats().SendersWaiting, "a refused sender changes nothing")
			_, err := w.s.ScheduleWith(&script{}, 0, offer.Options{MinChannels: 4, Only: []peer.ID{"A", "B"}, Avoid: []peer.ID{"B"}})
			require.NoError(t, err, "A is still possible")
		})
	})
}

// stepLimiter is a Limiter whose limit the test sets.
type stepLimiter struct{ limit int }

func (l *stepLimiter) Limit() int           { return l.limit }
func (l *stepLimiter) Observe(limit.Sample) {}

// TestPromise18_ParkedAndUnmatchedSendersChangeNothing: senders parked at
// both priorities, and senders set aside for wants no channel meets, do
// not move the starvation bound of promise 18: the low stream's first
// offer comes after k to the high stream, and every later one within
// k + 3 offers.
func TestPromise18_ParkedAndUnmatchedSendersChangeNothing(t *testing.T) {
	const offers = 400
	k := DefaultPassOverLimit
	var order []int
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 1)
		var parked []*script
		for _, p := range []int{5, 5, 0, 0} { // the high level's first: nothing is passed over
			snd := &script{}
			parked = append(parked, snd)
			_, err := w.s.Schedule(snd, p)
			require.NoError(t, err)
		}
		for _, p := range []int{5, 0} {
			_, err := w.s.ScheduleWith(&script{}, p, offer.Options{Only: []peer.ID{"elsewhere"}})
			require.NoError(t, err)
		}
		require.Equal(t, 4, w.s.Stats().SendersParked)
		_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Hour, &ids)}, 0) // holds A meanwhile
		require.NoError(t, err)

		var stream func(priority int) *script
		stream = func(priority int) *script {
			return &script{onOffer: func(o offer.Offer) {
				id, err := o.Request(0, "x", rec, time.Hour)
				require.NoError(t, err)
				ids = append(ids, id)
				order = append(order, priority)
				_, err = w.s.Schedule(stream(priority), priority)
				require.NoError(t, err)
			}}
		}
		for _, p := range []int{0, 5, 5} {
			_, err := w.s.Schedule(stream(p), p)
			require.NoError(t, err)
		}
		for len(order) < offers {
			require.NoError(t, w.s.Deliver("A", ids[len(ids)-1], "ok"))
		}
		for _, snd := range parked {
			require.Equal(t, 1, snd.offerCount(), "parked throughout")
		}
	})
	require.Equal(t, k, slices.Index(order, 0), "%v", order[:k+1])
	last := -1
	for i, p := range order {
		if p == 0 {
			require.LessOrEqual(t, i-last, k+3, fmt.Sprintf("offer %d: the low stream waited longer than the bound", i))
			last = i
		}
	}
}

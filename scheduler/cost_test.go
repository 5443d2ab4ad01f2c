package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
)

// TestPromise21_EachMessageIsChargedItsDeclaredCost: a paced peer is
// charged what each message's sender declared it costs (offer.Options.Cost),
// or its Rate's Cost if it declared nothing: a light message leaves the
// rest in the peer's bucket for the next; a send the host refuses gives
// back exactly its declared cost; a dearer cost than the Rate's is charged
// in full and makes the peer's channels count at it; bad costs are refused
// with ErrBadCost and change nothing. In both callback modes.
func TestPromise21_EachMessageIsChargedItsDeclaredCost(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			declaredCosts(t, inline)
		})
	}
}

// costSend is one send the host was asked to make to the paced peer.
type costSend struct {
	at       time.Duration
	message  string
	accepted bool
}

func declaredCosts(t *testing.T, inline bool) {
	// 250 units a query, 1,000 a second: a query every 250ms, after a
	// burst of two.
	rate := limit.Rate{Cost: 250, PerSecond: 1000, Burst: 500}
	inBubbleAsIs(t, Config{InlineCallbacks: inline}, func(w *world) {
		start := w.clock.Now()
		var sends []costSend
		a := &hostPeer{id: "A"}
		a.onSend = func(_ peer.RequestID, message any) {
			a.mu.Lock()
			sends = append(sends, costSend{at: w.clock.Since(start), message: message.(string), accepted: a.fail == nil})
			a.fail = nil // a refusal, below, is for one send only
			a.mu.Unlock()
		}
		fixed16 := limit.Bounds{Min: 16, Start: 16, Max: 16} // the rate binds, not the limit
		require.NoError(t, w.s.ConnectWith(a, peer.Options{Bounds: fixed16, Rate: rate}))
		w.settle()
		costOf := map[string]int64{}
		// schedule schedules a sender that sends message once, as a request
		// or a notification, declaring cost (0: none).
		schedule := func(message string, cost int64, notify bool) {
			t.Helper()
			costOf[message] = cost
			if cost == 0 {
				costOf[message] = rate.Cost
			}
			snd := &script{onOffer: func(o offer.Offer) {
				if notify {
					_ = o.Notify(0, message, time.Hour)
				} else {
					_, _ = o.Request(0, message, newOutcomes(), time.Hour)
				}
			}}
			_, err := w.s.ScheduleWith(snd, 0, offer.Options{Cost: cost})
			require.NoError(t, err, message)
			w.settle()
		}
		sentAt := func() (at []time.Duration, messages []string) {
			a.mu.Lock()
			defer a.mu.Unlock()
			for _, s := range sends {
				at, messages = append(at, s.at), append(messages, s.message)
			}
			return at, messages
		}
		last := func() costSend {
			a.mu.Lock()
			defer a.mu.Unlock()
			return sends[len(sends)-1]
		}
		refuseNext := func() {
			a.mu.Lock()
			a.fail = errRefused
			a.mu.Unlock()
		}

		// Two notifications of 100 units leave 300 of the 500: a query
		// still goes at once, and leaves 50.
		schedule("light1", 100, true)
		schedule("light2", 100, true)
		require.Equal(t, peer.Usage{ID: "A", Channels: 3, ChannelsOpen: 1, ChannelsClosed: 2, Limit: 16}, w.usage("A"),
			"300 units left pay for one more query")
		schedule("query1", 0, false)
		require.Equal(t, "query1", last().message)
		require.Zero(t, last().at, "the light messages left room for the query")
		require.Zero(t, w.usage("A").ChannelsOpen, "50 units left")

		// The next query waits for the 200 units it lacks: 200ms.
		schedule("query2", 0, false)
		w.advance(199 * time.Millisecond)
		w.settle()
		require.Equal(t, "query1", last().message)
		w.advance(time.Millisecond)
		w.settle()
		require.Equal(t, costSend{at: 200 * time.Millisecond, message: "query2", accepted: true}, last())

		// A light send the host refuses gives back its 100 units, no more
		// and no less: once the bucket holds 250 again, a query goes in the
		// same instant as the refusal, and the next waits the full 250ms.
		now := 200 * time.Millisecond
		for _, notify := range []bool{false, true} {
			now += 250 * time.Millisecond
			w.advance(250 * time.Millisecond)
			w.settle()
			refuseNext()
			refused := fmt.Sprintf("refused light (notify %v)", notify)
			schedule(refused, 100, notify)
			require.Equal(t, costSend{at: now, message: refused, accepted: false}, last())
			schedule("after "+refused, 0, false)
			require.Equal(t, costSend{at: now, message: "after " + refused, accepted: true}, last(),
				"the refusal gave back what it took")
			schedule("then "+refused, 0, false)
			w.advance(250*time.Millisecond - 1)
			w.settle()
			require.Equal(t, "after "+refused, last().message, "the refusal gave back no more than it took")
			w.advance(1)
			w.settle()
			now += 250 * time.Millisecond
			require.Equal(t, costSend{at: now, message: "then " + refused, accepted: true}, last())
		}

		// A cost above the Rate's is charged in full, and from then on
		// the peer's channels count at it: its channels open only when it
		// holds 500 units, and a query behind the dear message waits for
		// 500 more.
		w.advance(250 * time.Millisecond) // 250 units
		w.settle()
		require.Equal(t, 1, w.usage("A").ChannelsOpen)
		schedule("dear", 500, false)
		require.Zero(t, w.usage("A").ChannelsOpen, "250 units do not pay for the dearest message")
		schedule("query after dear", 0, false)
		w.advance(250*time.Millisecond - 1)
		w.settle()
		require.Equal(t, "then refused light (notify true)", last().message)
		w.advance(1)
		w.settle()
		now += 500 * time.Millisecond
		require.Equal(t, costSend{at: now, message: "dear", accepted: true}, last())
		w.advance(500*time.Millisecond - 1)
		w.settle()
		require.Equal(t, "dear", last().message, "the dear message was charged its 500 units")
		w.advance(1)
		w.settle()
		now += 500 * time.Millisecond
		require.Equal(t, costSend{at: now, message: "query after dear", accepted: true}, last())

		// Over any window, what the peer took costs at most its burst plus
		// its rate times the window.
		var accepted []time.Duration
		var costs []int64
		at, messages := sentAt()
		for i := range at {
			if sends[i].accepted {
				accepted, costs = append(accepted, at[i]), append(costs, costOf[messages[i]])
			}
		}
		require.Len(t, accepted, 10)
		require.Empty(t, overspent(accepted, costs, rate.PerSecond, rate.Burst))

		// Bad costs are refused, and change nothing: a negative one, one
		// above the connected peer's burst, one no peer could pay; and a
		// peer whose burst is below the dearest cost declared.
		before := w.s.Stats()
		for _, bad := range []int64{-1, rate.Burst + 1, limit.MaxBurst + 1} {
			_, err := w.s.ScheduleWith(&script{}, 0, offer.Options{Cost: bad})
			require.ErrorIs(t, err, ErrBadCost, "cost %d", bad)
		}
		err := w.s.ConnectWith(&hostPeer{id: "B"}, peer.Options{Rate: limit.Rate{Cost: 100, PerSecond: 100, Burst: 499}})
		require.ErrorIs(t, err, ErrBadCost, "a burst below the dearest cost declared, 500")
		require.Equal(t, before, w.s.Stats())
		require.Len(t, w.s.PeerUsage(nil), 1)
		require.NoError(t, w.s.ConnectWith(&hostPeer{id: "B"}, peer.Options{Rate: limit.Rate{Cost: 100, PerSecond: 100, Burst: 500}}))
		w.settle()
		require.Equal(t, 1, w.usage("B").ChannelsOpen, "counted at the dearest cost: 500 units pay for one")
	})
}

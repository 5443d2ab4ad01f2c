package hedge_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// TestNoSlowNoHedge: a request answered before its soft deadline is never
// hedged: no other peer is asked, no sender waits, no token is spent, and
// its receiver gets the answer once.
func TestNoSlowNoHedge(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		r := newOutcomes()
		b, id := w.askA(r)
		w.advance(soft - time.Millisecond)
		require.NoError(t, w.s.Deliver("A", id, "x"))
		w.advance(2 * hard)
		require.Equal(t, []string{"response from A: x"}, r.of(w.call(id)))
		require.Empty(t, b.sends())
		require.Zero(t, w.s.Stats().SendersWaiting)
		require.Equal(t, hedge.Stats{Requests: 1, Tokens: hedge.DefaultBurst}, w.h.Stats())
	})
}

// TestHedgeWins: at the soft deadline the same message goes to another
// peer; its answer, the first, is the receiver's one call, under the first
// request's ID, and the first request is withdrawn (its channel stays
// closed until its own answer, which reaches nobody).
func TestHedgeWins(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		r := newOutcomes()
		b, id := w.askA(r)
		w.advance(soft - time.Millisecond)
		require.Empty(t, b.sends(), "not slow yet")
		w.advance(time.Millisecond)
		hedged := b.only(t)
		require.Equal(t, "get x", hedged.message)
		require.NotEqual(t, id, hedged.id)
		require.Empty(t, r.of(w.call(id)))
		st := w.h.Stats()
		require.Equal(t, uint64(1), st.Slow)
		require.Equal(t, uint64(1), st.Hedges)
		require.Equal(t, hedge.DefaultBurst-1, st.Tokens)

		require.NoError(t, w.s.Deliver("B", hedged.id, "x from B"))
		require.Equal(t, []string{"response from B: x from B"}, r.of(w.call(id)))
		require.Equal(t, 1, w.closed("A"), "the first request is still out")
		require.False(t, w.s.WithdrawReceiver(id), "its receiver was withdrawn")
		require.NoError(t, w.s.Deliver("A", id, "x from A"))
		w.advance(2 * hard)
		require.Equal(t, []string{"response from B: x from B"}, r.of(w.call(id)), "one call")
		st = w.h.Stats()
		require.Equal(t, uint64(1), st.HedgeWins)
		require.Zero(t, st.Live)
	})
}

// TestFirstWinsAfterHedge: the first request answers after its hedge was
// sent: its answer is the one call, and the hedge is withdrawn.
func TestFirstWinsAfterHedge(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		r := newOutcomes()
		b, id := w.askA(r)
		w.advance(soft)
		hedged := b.only(t)
		w.advance(10 * time.Millisecond)
		require.NoError(t, w.s.Deliver("A", id, "x from A"))
		require.Equal(t, []string{"response from A: x from A"}, r.of(w.call(id)))
		require.Equal(t, 1, w.closed("B"), "the hedge is still out")
		require.False(t, w.s.WithdrawReceiver(hedged.id), "its receiver was withdrawn")
		require.NoError(t, w.s.Deliver("B", hedged.id, "x from B"))
		w.advance(2 * hard)
		require.Equal(t, []string{"response from A: x from A"}, r.of(w.call(id)))
		require.Zero(t, w.h.Stats().HedgeWins)
	})
}

// TestBothFail: when one request fails while the other may still answer,
// the receiver waits; when both have failed it is told once, with the
// last failure. A first request that fails while its hedge still waits for
// a channel ends the call at once, and the hedge leaves the queue with its
// token refunded.
func TestBothFail(t *testing.T) {
	t.Run("hedge refused, then the first times out", func(t *testing.T) {
		inBubble(t, hedge.BudgetConfig{}, func(w *world) {
			r := newOutcomes()
			b, id := w.askA(r)
			w.advance(soft)
			require.NoError(t, w.s.Refuse("B", b.only(t).id))
			require.Empty(t, r.of(w.call(id)), "the first may still answer")
			w.advance(hard - soft)
			require.Equal(t, []string{"failure from A: timeout"}, r.of(w.call(id)))
			w.advance(2 * hard)
			require.Len(t, r.of(w.call(id)), 1)
		})
	})
	t.Run("first disconnected, then the hedge times out", func(t *testing.T) {
		inBubble(t, hedge.BudgetConfig{}, func(w *world) {
			r := newOutcomes()
			_, id := w.askA(r)
			w.advance(soft)
			require.NoError(t, w.s.Disconnect("A"))
			require.Empty(t, r.of(w.call(id)), "the hedge may still answer")
			w.advance(hard - time.Millisecond)
			require.Empty(t, r.of(w.call(id)), "the hedge's deadline runs from its own send")
			w.advance(time.Millisecond)
			require.Equal(t, []string{"failure from B: timeout"}, r.of(w.call(id)))
			w.advance(2 * hard)
			require.Len(t, r.of(w.call(id)), 1)
		})
	})
	t.Run("first fails while its hedge waits", func(t *testing.T) {
		inBubble(t, hedge.BudgetConfig{}, func(w *world) {
			w.connect("A", 1)
			b := w.connect("B", 1)
			busy := w.requestWith("B", "get y", newOutcomes(), 0, hard) // B's one channel; never slow
			r := newOutcomes()
			id := w.request("A", "get x", r)
			w.advance(soft)
			require.Equal(t, 1, w.s.Stats().SendersWaiting, "the hedge waits for B")
			require.Equal(t, hedge.DefaultBurst-1, w.h.Stats().Tokens)
			require.NoError(t, w.s.Refuse("A", id))
			require.Equal(t, []string{"failure from A: refused"}, r.of(w.call(id)))
			require.Zero(t, w.s.Stats().SendersWaiting, "the hedge left the queue")
			require.Equal(t, hedge.DefaultBurst, w.h.Stats().Tokens, "its token refunded")
			require.NoError(t, w.s.Deliver("B", busy, "y"))
			require.Len(t, b.sends(), 1, "x's hedge never went")
		})
	})
}

// TestBudgetSpent: a slow request is hedged only while the budget allows,
// and the requests sent refill it.
func TestBudgetSpent(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{Burst: 1}, func(w *world) {
		w.connect("A", 2)
		b := w.connect("B", 2)
		r := newOutcomes()
		first := w.request("A", "get x", r)
		second := w.request("A", "get y", r)
		w.advance(soft)
		hedged := b.only(t)
		require.Equal(t, "get x", hedged.message, "the first slow request took the one token")
		st := w.h.Stats()
		require.Equal(t, uint64(2), st.Slow)
		require.Equal(t, uint64(1), st.Hedges)
		require.Equal(t, uint64(1), st.Denied)
		require.Zero(t, w.s.Stats().SendersWaiting)
		w.advance(hard - soft)
		require.Equal(t, []string{"failure from A: timeout"}, r.of(w.call(second)), "unhedged, it waited out its deadline")
		require.Empty(t, r.of(w.call(first)), "its hedge may still answer")
		require.Equal(t, 0, w.closed("A"), "the first timed out too")
		require.NoError(t, w.s.Deliver("B", hedged.id, "x"))
		require.Equal(t, []string{"response from B: x"}, r.of(w.call(first)))

		// Twenty requests sent earn the next hedge, at 5%.
		for range 20 {
			id := w.request("A", "get z", r)
			require.NoError(t, w.s.Deliver("A", id, "z"))
		}
		require.Equal(t, 1, w.h.Stats().Tokens)
		w.request("A", "get w", r)
		w.advance(soft)
		require.Len(t, b.sends(), 2)
		require.Equal(t, "get w", b.sends()[1].message)
	})
}

// TestOnlyTheSlowPeer: a hedge never goes to the slow request's own peer:
// while only that peer has open channels, the hedge waits in the queue;
// when the first request answers, the hedge leaves the queue unsent and
// its token is refunded. A peer that connects while it waits gets it.
func TestOnlyTheSlowPeer(t *testing.T) {
	t.Run("withdrawn when the first answers", func(t *testing.T) {
		inBubble(t, hedge.BudgetConfig{}, func(w *world) {
			a := w.connect("A", 2)
			r := newOutcomes()
			id := w.request("A", "get x", r)
			w.advance(soft)
			require.Len(t, a.sends(), 1, "A's second channel is not for the hedge")
			require.Equal(t, 1, w.s.Stats().SendersWaiting)
			require.Equal(t, 1, w.h.Stats().Waiting)
			require.Equal(t, hedge.DefaultBurst-1, w.h.Stats().Tokens)
			require.NoError(t, w.s.Deliver("A", id, "x"))
			require.Equal(t, []string{"response from A: x"}, r.of(w.call(id)))
			require.Zero(t, w.s.Stats().SendersWaiting, "the hedge left the queue")
			require.Zero(t, w.h.Stats().Waiting)
			require.Equal(t, hedge.DefaultBurst, w.h.Stats().Tokens, "its token refunded")
			b := w.connect("B", 1)
			w.advance(2 * hard)
			require.Empty(t, b.sends())
			require.Zero(t, w.h.Stats().Hedges)
		})
	})
	t.Run("sent to a peer that connects", func(t *testing.T) {
		inBubble(t, hedge.BudgetConfig{}, func(w *world) {
			w.connect("A", 2)
			r := newOutcomes()
			id := w.request("A", "get x", r)
			w.advance(soft)
			b := w.connect("B", 1)
			hedged := b.only(t)
			require.Equal(t, "get x", hedged.message)
			require.NoError(t, w.s.Deliver("B", hedged.id, "x"))
			require.Equal(t, []string{"response from B: x"}, r.of(w.call(id)))
		})
	})
}

// TestHostRefusesTheHedge: a hedge whose send the host refuses goes to the
// next channel of another peer instead.
func TestHostRefusesTheHedge(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		w.connect("A", 1)
		b := w.connect("B", 1)
		b.fail = errors.New("link down")
		c := w.connect("C", 1)
		r := newOutcomes()
		id := w.request("A", "get x", r)
		w.advance(soft)
		require.Empty(t, b.sends())
		require.NoError(t, w.s.Deliver("C", c.only(t).id, "x"))
		require.Equal(t, []string{"response from C: x"}, r.of(w.call(id)))
		require.Equal(t, uint64(1), w.h.Stats().Hedges)
	})
}

// TestHostRefusesEveryHedgeChannel: a hedge whose every send the host
// refuses sent nothing, and the scheduler parks it: it is not offered the
// refusing peer's channel again and again. It waits, parked, until its
// call ends, which withdraws it and refunds its token.
func TestHostRefusesEveryHedgeChannel(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		r := newOutcomes()
		b, id := w.askA(r)
		b.fail = errors.New("link down")
		w.advance(soft)
		require.Equal(t, 1, w.s.Stats().SendersParked, "its send failed: parked")
		require.Equal(t, 1, w.h.Stats().Waiting)
		require.Equal(t, hedge.DefaultBurst-1, w.h.Stats().Tokens)
		w.connect("C", 1)
		require.Empty(t, w.peers["C"].sends(), "parked: not offered C either")
		require.NoError(t, w.s.Deliver("A", w.peers["A"].only(t).id, "x"))
		require.Equal(t, []string{"response from A: x"}, r.of(w.call(id)))
		require.Zero(t, w.s.Stats().SendersWaiting, "the hedge was withdrawn")
		require.Zero(t, w.h.Stats().Waiting)
		require.Equal(t, hedge.DefaultBurst, w.h.Stats().Tokens, "its token refunded")
		require.Zero(t, w.h.Stats().Hedges)
	})
}

// TestHedgesAvoidTheFirstPeerAndWhatTheyAreTold: a hedge is scheduled
// avoiding the first request's peer, besides the peers the Hedger's
// options avoid.
func TestHedgesAvoidTheFirstPeerAndWhatTheyAreTold(t *testing.T) {
	opts := hedge.Options{Sender: offer.Options{Avoid: []peer.ID{"B"}}}
	inBubbleWith(t, scheduler.Config{InlineCallbacks: true}, hedge.BudgetConfig{}, opts, func(w *world) {
		w.askA(newOutcomes())
		w.advance(soft)
		require.Empty(t, w.peers["B"].sends(), "B is avoided")
		require.Equal(t, 1, w.h.Stats().Waiting, "only A and B are open: the hedge waits")
		require.Zero(t, w.s.Stats().SendersParked, "waiting for a channel it wants, not parked")
		c := w.connect("C", 1)
		hedged := c.only(t)
		require.Equal(t, "get x", hedged.message)
	})
}

// TestStopEndsEachCallOnce: a stop ends every call once, as shut down,
// whether its hedge was sent or still waited (that one's token refunded).
func TestStopEndsEachCallOnce(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		w.connect("A", 2)
		b := w.connect("B", 1)
		r := newOutcomes()
		sentHedge := w.request("A", "get x", r)
		w.advance(soft)
		b.only(t)
		waitingHedge := w.request("A", "get y", r)
		w.advance(soft)
		require.Equal(t, 1, w.s.Stats().SendersWaiting, "y's hedge waits: B is busy")
		require.Equal(t, hedge.DefaultBurst-2, w.h.Stats().Tokens)
		w.s.Stop()
		w.advance(0)
		require.Equal(t, []string{"failure from A: shutdown"}, r.of(w.call(waitingHedge)))
		require.Len(t, r.of(w.call(sentHedge)), 1)
		require.Contains(t, r.of(w.call(sentHedge))[0], "shutdown")
		st := w.h.Stats()
		require.Equal(t, hedge.DefaultBurst-1, st.Tokens, "the unsent hedge's token came back")
		require.Zero(t, st.Live)
	})
}

// TestWithdraw: a withdrawn call gets no call at all: both its requests'
// receivers are withdrawn, and a hedge still waiting leaves the queue with
// its token refunded. A second withdrawal, or one after the end, fails.
func TestWithdraw(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		w.connect("A", 2)
		b := w.connect("B", 1)
		r := newOutcomes()
		x := w.request("A", "get x", r)
		w.advance(soft)
		hx := b.only(t).id
		y := w.request("A", "get y", r)
		w.advance(soft)
		require.Equal(t, 1, w.s.Stats().SendersWaiting)

		require.True(t, w.h.Withdraw(w.call(x)))
		require.False(t, w.h.Withdraw(w.call(x)))
		require.False(t, w.s.WithdrawReceiver(x))
		require.False(t, w.s.WithdrawReceiver(hx))
		require.Equal(t, 1, w.h.Stats().Waiting)
		require.True(t, w.h.Withdraw(w.call(y)))
		require.Zero(t, w.s.Stats().SendersWaiting)
		require.Zero(t, w.h.Stats().Waiting)
		require.Equal(t, hedge.DefaultBurst-1, w.h.Stats().Tokens, "y's hedge was never sent")

		require.NoError(t, w.s.Deliver("B", hx, "x"))
		require.NoError(t, w.s.Deliver("A", x, "x"))
		w.advance(2 * hard)
		require.Zero(t, r.count())
		require.Len(t, b.sends(), 1, "y's hedge never went, though B's channel opened")
		require.False(t, w.h.Withdraw(w.call(y)))
		require.Zero(t, w.h.Stats().Live)

		z := w.request("A", "get z", r)
		require.NoError(t, w.s.Deliver("A", z, "z"))
		require.False(t, w.h.Withdraw(w.call(z)), "ended")
	})
}

// decider is a hedge.Receiver that declines to hedge at the soft deadline
// and records what it is told.
type decider struct {
	*outcomes
	want   bool
	asked  []string
	hedges []string
}

func (d *decider) WantHedge(_ hedge.CallID, from peer.ID) bool {
	d.asked = append(d.asked, string(from))
	return d.want
}

func (d *decider) OnHedge(_ hedge.CallID, to peer.ID) {
	d.hedges = append(d.hedges, string(to))
}

// TestReceiverDecidesWhen: a hedge.Receiver is asked at the soft deadline,
// once; declining leaves the request unhedged until Hedge, and it hears of
// the hedge when it is sent.
func TestReceiverDecidesWhen(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		d := &decider{outcomes: newOutcomes()}
		b, id := w.askA(d)
		require.False(t, w.h.Hedge(w.call(id)), "not slow yet")
		w.advance(soft)
		require.Equal(t, []string{"A"}, d.asked)
		require.Empty(t, b.sends())
		require.Zero(t, w.s.Stats().SendersWaiting)
		require.Equal(t, hedge.DefaultBurst, w.h.Stats().Tokens)

		require.True(t, w.h.Hedge(w.call(id)))
		hedged := b.only(t)
		require.Equal(t, []string{"B"}, d.hedges)
		require.False(t, w.h.Hedge(w.call(id)), "hedged once")
		require.NoError(t, w.s.Deliver("B", hedged.id, "x"))
		require.Equal(t, []string{"response from B: x"}, d.of(w.call(id)))
		require.False(t, w.h.Hedge(w.call(id)), "ended")
		require.Equal(t, []string{"A"}, d.asked)
		require.NoError(t, w.s.Deliver("A", id, "x")) // A's channel opens

		d.want = true
		id = w.request("A", "get y", d)
		w.advance(soft)
		require.Len(t, b.sends(), 2, "wanted: hedged at once")
		require.Equal(t, []string{"B", "B"}, d.hedges)
		require.False(t, w.h.Hedge(w.call(id)), "hedged already")
	})
}

// TestRequestErrors: bad input gets the offer's errors and sends nothing;
// a request without a soft deadline before its hard one is never hedged.
func TestRequestErrors(t *testing.T) {
	_, err := hedge.NewHedger(nil, nil, hedge.Options{})
	require.ErrorIs(t, err, hedge.ErrNilScheduler)

	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		a := w.connect("A", 1)
		b := w.connect("B", 1)
		var errs []error
		_, err := w.s.Schedule(senderFunc(func(o offer.Offer) {
			for _, c := range []struct {
				r          receiver.Receiver
				soft, hard time.Duration
			}{{nil, soft, hard}, {newOutcomes(), -soft, hard}, {newOutcomes(), 0, 0}, {newOutcomes(), soft, -hard}} {
				_, err := w.h.Request(o, 0, "x", c.r, c.soft, c.hard)
				errs = append(errs, err)
			}
			_, err := w.h.Request(o, 5, "x", newOutcomes(), soft, hard)
			errs = append(errs, err)
		}), 0)
		require.NoError(t, err)
		require.Len(t, errs, 5)
		require.ErrorIs(t, errs[0], receiver.ErrNilReceiver)
		for _, err := range errs[1:4] {
			require.ErrorIs(t, err, receiver.ErrBadTimeout)
		}
		require.ErrorIs(t, errs[4], offer.ErrNoSuchChannel)
		_, err = w.h.Request(offer.Offer{}, 0, "x", newOutcomes(), soft, hard)
		require.ErrorIs(t, err, offer.ErrExpired)
		require.Empty(t, a.sends())
		require.Zero(t, w.h.Stats().Requests)

		for _, d := range [][2]time.Duration{{0, hard}, {hard, hard}, {2 * hard, hard}} {
			r := newOutcomes()
			id := w.requestWith("A", "get x", r, d[0], d[1])
			w.advance(hard)
			require.Equal(t, []string{"failure from A: timeout"}, r.of(w.call(id)), "soft %v, hard %v", d[0], d[1])
		}
		require.Empty(t, b.sends(), "never hedged")
		require.Equal(t, hedge.Stats{Requests: 3, Tokens: hedge.DefaultBurst}, w.h.Stats())
	})
}

// TestEveryCallEndsOnce drives many hedged requests with the scheduler's
// callbacks on its own goroutine: requests sent from goroutines that
// OnOffer waits for, answers delivered while other goroutines withdraw
// calls, deadlines passing. Every call ends exactly once for its
// receiver, or not at all if Withdraw took it away, and the Hedger keeps
// nothing at the end. (Run with -race, it also checks the Hedger's
// locking.)
func TestEveryCallEndsOnce(t *testing.T) {
	inBubbleWith(t, scheduler.Config{}, hedge.BudgetConfig{PerThousand: 500, Burst: 20}, hedge.Options{}, func(w *world) {
		for _, id := range []peer.ID{"A", "B", "C", "D"} {
			w.connect(id, 4)
		}
		r := newOutcomes()
		rng := rand.New(rand.NewPCG(1, 2))
		var mu sync.Mutex
		var ids []hedge.CallID
		withdrawn := map[hedge.CallID]bool{}
		answered := map[peer.ID]int{} // sends of each peer looked at so far
		for range 40 {
			for range 6 {
				_, err := w.s.Schedule(senderFunc(func(o offer.Offer) {
					var wg sync.WaitGroup
					wg.Go(func() {
						if id, err := w.h.Request(o, 0, "m", r, soft, hard); err == nil {
							mu.Lock()
							ids = append(ids, id)
							mu.Unlock()
						}
					})
					wg.Wait()
				}), 0)
				require.NoError(t, err)
			}
			w.advance(soft)
			type pending struct {
				to peer.ID
				id peer.RequestID
			}
			var out []pending
			for id, p := range w.peers {
				s := p.sends()
				for _, m := range s[answered[id]:] {
					out = append(out, pending{id, m.id})
				}
				answered[id] = len(s)
			}
			rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
			mu.Lock()
			victims := make([]hedge.CallID, 0, 3)
			for range 3 {
				victims = append(victims, ids[rng.IntN(len(ids))])
			}
			mu.Unlock()
			var wg sync.WaitGroup
			wg.Go(func() {
				for _, p := range out[:len(out)*2/3] {
					_ = w.s.Deliver(p.to, p.id, "ok")
				}
			})
			wg.Go(func() {
				for _, id := range victims {
					if w.h.Withdraw(id) {
						mu.Lock()
						withdrawn[id] = true
						mu.Unlock()
					}
				}
			})
			wg.Wait()
			w.advance(time.Duration(rng.IntN(int(hard/time.Millisecond))) * time.Millisecond)
		}
		w.advance(3 * hard)
		st := w.h.Stats()
		require.Zero(t, st.Live)
		require.Zero(t, st.Waiting)
		require.NotZero(t, st.Hedges)
		require.NotZero(t, st.HedgeWins)
		require.NotEmpty(t, withdrawn)
		for _, id := range ids {
			want := 1
			if withdrawn[id] {
				want = 0
			}
			require.Len(t, r.of(id), want, "request %d (withdrawn: %v)", id, withdrawn[id])
		}
		t.Logf("%d requests, %d withdrawn, %+v", len(ids), len(withdrawn), st)
	})
}

// TestUnqueuedHedge: a hedge the scheduler will not queue (here, a class
// it does not know) is not sent; its token comes back, Stats counts it,
// and the request goes on to its own answer. Hedge may try again.
func TestUnqueuedHedge(t *testing.T) {
	opts := hedge.Options{Sender: offer.Options{Class: "no such class"}}
	inBubbleWith(t, scheduler.Config{InlineCallbacks: true}, hedge.BudgetConfig{}, opts, func(w *world) {
		h := w.h
		r := newOutcomes()
		b, id := w.askA(r)
		w.advance(soft)
		st := h.Stats()
		require.Equal(t, uint64(1), st.Unqueued)
		require.Zero(t, st.Hedges)
		require.Equal(t, hedge.DefaultBurst, st.Tokens)
		require.Empty(t, b.sends())
		require.False(t, h.Hedge(w.call(id)))
		require.Equal(t, uint64(2), h.Stats().Unqueued)
		require.NoError(t, w.s.Deliver("A", id, "x"))
		require.Equal(t, []string{"response from A: x"}, r.of(w.call(id)))
	})
}

// reentrant is a hedge.Receiver that calls the Hedger from inside each of
// its callbacks: it hedges its slow request itself from WantHedge, and
// tries to hedge and to withdraw it again from OnHedge and OnResponse.
type reentrant struct {
	*outcomes
	h     *hedge.Hedger
	calls []string
}

func (r *reentrant) WantHedge(id hedge.CallID, _ peer.ID) bool {
	r.calls = append(r.calls, fmt.Sprintf("WantHedge: Hedge %v", r.h.Hedge(id)))
	return false
}

func (r *reentrant) OnHedge(id hedge.CallID, _ peer.ID) {
	r.calls = append(r.calls, fmt.Sprintf("OnHedge: Hedge %v", r.h.Hedge(id)))
}

func (r *reentrant) OnResponse(id peer.RequestID, from peer.ID, response any) {
	r.calls = append(r.calls, fmt.Sprintf("OnResponse: Withdraw %v", r.h.Withdraw(hedge.CallID(id))))
	r.outcomes.OnResponse(id, from, response)
}

// TestCallbacksMayCallTheHedger: a Receiver's callbacks may call the
// Hedger that runs them (the Hedger holds no lock of its own while it
// calls user code), and each call takes effect before the outer call
// returns: the hedge that WantHedge asks for is sent by the time the soft
// deadline's callbacks have run, and is the only one.
func TestCallbacksMayCallTheHedger(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		r := &reentrant{outcomes: newOutcomes(), h: w.h}
		b, id := w.askA(r)
		w.advance(soft)
		hedged := b.only(t)
		require.Equal(t, []string{"WantHedge: Hedge true", "OnHedge: Hedge false"}, r.calls)
		require.NoError(t, w.s.Deliver("B", hedged.id, "x"))
		require.Equal(t, []string{"response from B: x"}, r.of(w.call(id)))
		require.Equal(t, "OnResponse: Withdraw false", r.calls[2], "the call had ended")
		require.Len(t, r.calls, 3)
		require.Equal(t, uint64(1), w.h.Stats().Hedges)
		require.Zero(t, w.h.Stats().Live)
	})
}

// TestCallIDOutlivesReusedRequestIDs: a call's handle names it for its
// whole life, whatever request IDs the scheduler reuses meanwhile (issue
// 24, item 2). With two request IDs, call A's first request (to P1) fails
// with P1's disconnect while its hedge (to P2) is live, and call B's
// request is given A's freed first ID. Withdrawing A withdraws A, not B:
// A's receiver hears nothing of its hedge's answer, and B's receiver gets
// B's answer. In both callback modes.
func TestCallIDOutlivesReusedRequestIDs(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			sc := scheduler.Config{InlineCallbacks: inline, RequestIDs: receiver.IDRange{Lo: 1, Hi: 3}}
			inBubbleWith(t, sc, hedge.BudgetConfig{}, hedge.Options{}, func(w *world) {
				w.connect("P1", 1)
				p2 := w.connect("P2", 1)
				ra, rb := newOutcomes(), newOutcomes()
				a := w.request("P1", "get a", ra)
				w.advance(soft)
				hedgeOfA := p2.only(t).id
				require.Equal(t, []peer.RequestID{1, 2}, []peer.RequestID{a, hedgeOfA})
				require.NoError(t, w.s.Disconnect("P1"))
				w.advance(0)
				require.Empty(t, ra.of(w.call(a)), "A waits on its hedge")

				callA := w.call(a)
				w.connect("P3", 1)
				b := w.request("P3", "get b", rb)
				require.Equal(t, a, b, "B's request has A's freed first ID")
				callB := w.call(b)
				require.NotEqual(t, callA, callB, "two calls, two handles")

				require.True(t, w.h.Withdraw(callA))
				require.False(t, w.h.Withdraw(callA), "withdrawn once")
				require.NoError(t, w.s.Deliver("P2", hedgeOfA, "a from P2"))
				require.NoError(t, w.s.Deliver("P3", b, "b from P3"))
				w.advance(0)
				require.Empty(t, ra.of(callA), "A was withdrawn")
				require.Equal(t, []string{"response from P3: b from P3"}, rb.of(callB))
				require.False(t, w.h.Withdraw(callB), "B has ended")
				require.Zero(t, w.h.Stats().Live)
			})
		})
	}
}

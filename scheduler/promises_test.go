package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/internal/lockorder"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Each test here pins one promise of DESIGN.md, numbered as there.

func TestPromise01_OneExitPerSender(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 1)

		// A sender that sends leaves after that one offer.
		sender := &script{onOffer: sendFirst(rec, time.Second, &ids)}
		_, err := w.s.Schedule(sender, 0)
		require.NoError(t, err)
		require.Equal(t, 1, sender.offerCount())
		require.Len(t, ids, 1)

		// A sender that sends nothing keeps its place, parked: it has said
		// it has nothing to send, so it is offered nothing more, however
		// many channels open, until it asks again (Reoffer). Then it is
		// offered again, with the channels open then.
		picky := &script{onOffer: sendFirst(rec, time.Second, &ids, "B")}
		pickyTicket, err := w.s.Schedule(picky, 0)
		require.NoError(t, err)
		require.Zero(t, picky.offerCount(), "no open channel yet")
		require.NoError(t, w.s.Deliver("A", ids[0], "pong"))
		require.Equal(t, 1, picky.offerCount(), "offered the reopened channel")
		require.Equal(t, 1, w.s.Stats().SendersWaiting, "kept its place")
		require.Equal(t, 1, w.s.Stats().SendersParked, "parked")

		bystander := &script{}
		_, err = w.s.Schedule(bystander, 0)
		require.NoError(t, err)
		require.Equal(t, 1, bystander.offerCount())
		require.Equal(t, 1, picky.offerCount(), "parked: not offered again")

		w.connect("B", 1)
		require.Equal(t, 1, picky.offerCount(), "parked: not offered the new channel either")
		require.Equal(t, 2, w.s.Stats().SendersParked)
		require.True(t, w.s.Reoffer(pickyTicket))
		require.Equal(t, 2, picky.offerCount(), "asked again: offered again")
		require.Equal(t, []peer.ID{"A", "B"}, sortedIDs(picky.offers[1].channels), "the new offer has the new channel")
		require.Len(t, ids, 2, "it sent on B")
		require.Equal(t, 1, w.s.Stats().SendersWaiting, "and left the queue; the bystander waits")
		require.False(t, w.s.Reoffer(pickyTicket), "it has left: there is nothing to offer again")
		w.connect("C", 1)
		require.Equal(t, 2, picky.offerCount(), "a sender that sent is never offered again")

		// Withdrawn: no more callbacks. Discarded at stop: exactly one discard.
		require.NoError(t, w.s.Disconnect("A"))
		require.NoError(t, w.s.Disconnect("C"))
		withdrawn := &script{}
		tw, err := w.s.Schedule(withdrawn, 0)
		require.NoError(t, err)
		require.True(t, w.s.WithdrawSender(tw))
		require.False(t, w.s.WithdrawSender(tw), "a second withdrawal finds nothing")
		w.connect("D", 1)
		require.Zero(t, withdrawn.offerCount(), "a withdrawn sender is never offered")
		w.s.Stop()
		w.s.Stop()
		require.Zero(t, withdrawn.discards)
		require.Equal(t, 1, bystander.discards, "a waiting sender is discarded once")
		require.Zero(t, sender.discards+picky.discards, "senders that sent are never discarded")
	})
}

func TestPromise02_OneAnswerPerRequest(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		for _, id := range []peer.ID{"A", "B", "C"} {
			w.connect(id, 2)
		}
		send := func(to peer.ID, timeout time.Duration) peer.RequestID {
			_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, timeout, &ids, to)}, 0)
			require.NoError(t, err)
			return ids[len(ids)-1]
		}
		answered := send("A", time.Second)
		timedOut := send("A", 100*time.Millisecond)
		disconnected := send("B", time.Second)
		withdrawn := send("C", time.Second)
		shutdown := send("C", time.Second)

		require.NoError(t, w.s.Deliver("A", answered, "yes"))
		require.ErrorIs(t, w.s.Deliver("A", answered, "again"), receiver.ErrDuplicateResponse)
		w.advance(100 * time.Millisecond)
		require.ErrorIs(t, w.s.Deliver("A", timedOut, "too late"), receiver.ErrLateResponse)
		require.NoError(t, w.s.Disconnect("B"))
		require.ErrorIs(t, w.s.Deliver("B", disconnected, "after disconnect"), receiver.ErrLateResponse)
		require.True(t, w.s.WithdrawReceiver(withdrawn))
		require.NoError(t, w.s.Deliver("C", withdrawn, "nobody listens"))
		w.s.Stop()
		require.ErrorIs(t, w.s.Deliver("C", shutdown, "after stop"), ErrStopped)
		w.advance(time.Hour)

		require.Equal(t, []string{"response from A: yes"}, rec.of(answered))
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(timedOut))
		require.Equal(t, []string{"failure from B: disconnected"}, rec.of(disconnected))
		require.Empty(t, rec.of(withdrawn))
		require.Equal(t, []string{"failure from C: shutdown"}, rec.of(shutdown))
		require.Equal(t, 4, rec.total())
	})
}

func TestPromise03_ChannelsAreConserved(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		a := w.connect("A", 3)
		w.checkChannels()
		for range 3 {
			_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
			require.NoError(t, err)
			w.checkChannels()
		}
		require.Equal(t, peer.Usage{ID: "A", Channels: 3, ChannelsOpen: 0, ChannelsClosed: 3, Limit: 3}, w.usage("A"))

		// A channel reopens exactly once: by its response, not again by its deadline.
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
		require.Equal(t, 1, w.usage("A").ChannelsOpen)
		w.advance(2 * time.Second)
		require.Equal(t, 3, w.usage("A").ChannelsOpen, "the two others timed out")
		w.checkChannels()

		// A failed host send: the sender gets the error, the channel stays
		// open, and no receiver is ever called.
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		var sendErr error
		failing, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			_, sendErr = o.Request(0, "x", rec, time.Second)
		}}, 0)
		require.NoError(t, err)
		require.ErrorIs(t, sendErr, errRefused)
		require.Equal(t, 3, w.usage("A").ChannelsOpen)
		require.True(t, w.s.WithdrawSender(failing), "a sender whose send failed sent nothing: it still waits")
		calls := rec.total()
		w.advance(time.Hour)
		require.Equal(t, calls, rec.total(), "no callback for a message that was never sent")

		// A disconnected peer's channels are never offered again, even to a
		// peer that reconnects under its name (that one is new).
		require.NoError(t, w.s.Disconnect("A"))
		w.checkChannels()
		seen := &script{}
		_, err = w.s.Schedule(seen, 0)
		require.NoError(t, err)
		require.Zero(t, seen.offerCount())
		w.connect("A", 1)
		require.Equal(t, 1, seen.offerCount())
		require.Equal(t, peer.Usage{ID: "A", Channels: 1, ChannelsOpen: 1, Limit: 1}, w.usage("A"))
	})
}

func TestPromise03_NotificationReopensAfterDigest(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 1)
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			require.NoError(t, o.Notify(0, "hello", 300*time.Millisecond))
		}}, 0)
		require.NoError(t, err)
		require.Equal(t, 1, w.usage("A").ChannelsClosed)
		w.advance(299 * time.Millisecond)
		require.Equal(t, 1, w.usage("A").ChannelsClosed, "still digesting")
		w.advance(time.Millisecond)
		require.Equal(t, 1, w.usage("A").ChannelsOpen)
		require.Equal(t, []sentMessage{{0, "hello"}}, w.peers["A"].sends(), "a notification carries request ID 0")
	})
}

func TestPromise04_FairOffers(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		var order []string
		taker := func(name string) *script {
			return &script{name: name, onOffer: func(o offer.Offer) {
				order = append(order, fmt.Sprintf("%s:size=%d", name, o.Size()))
				id, err := o.Request(0, name, rec, time.Minute)
				require.NoError(t, err)
				ids = append(ids, id)
				// Beyond the offer's size: refused.
				if o.Len() > 1 {
					_, err = o.Request(1, name, rec, time.Minute)
					require.ErrorIs(t, err, offer.ErrSizeExceeded)
				}
			}}
		}
		for _, spec := range []struct {
			name     string
			priority int
		}{{"low1", 0}, {"high1", 5}, {"low2", 0}, {"high2", 5}, {"mid", 2}} {
			_, err := w.s.Schedule(taker(spec.name), spec.priority)
			require.NoError(t, err)
		}
		w.connect("A", 3)
		w.connect("B", 2)
		require.Equal(t, []string{"high1:size=1", "high2:size=1", "mid:size=1", "low1:size=1", "low2:size=1"}, order,
			"one channel each, by priority, FIFO within a priority")

		// Alone in the queue, a sender is offered every open channel (three,
		// fewer than DefaultMaxOfferChannels).
		for _, id := range ids[:3] {
			require.NoError(t, w.s.Deliver(peerOf(w, id), id, "ok"))
		}
		alone := &script{onOffer: func(o offer.Offer) {
			for i := range o.Size() {
				_, err := o.Request(i, "all", rec, time.Minute)
				require.NoError(t, err)
			}
		}}
		_, err := w.s.Schedule(alone, 0)
		require.NoError(t, err)
		require.Len(t, alone.offers, 1)
		require.Equal(t, 3, alone.offers[0].size)
		require.Len(t, alone.offers[0].channels, 3)
		require.Zero(t, w.s.Stats().ChannelsOpen)
	})
}

// TestPromise04_ALoneSenderClosesEveryChannelOverSuccessiveOffers: with
// more channels open than one offer lists, a sender alone in the queue is
// shown the best DefaultMaxOfferChannels, may close them all, and closes the
// rest from the offers it schedules itself for.
func TestPromise04_ALoneSenderClosesEveryChannelOverSuccessiveOffers(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		const peers, perPeer = 25, 6 // 150 open channels
		for i := range peers {
			w.connect(peer.ID(fmt.Sprintf("p%02d", i)), perPeer)
		}
		rec := newOutcomes()
		var lone *script
		lone = &script{onOffer: func(o offer.Offer) {
			for i := range o.Size() {
				_, err := o.Request(i, "x", rec, time.Minute)
				require.NoError(t, err)
			}
			if w.s.Stats().ChannelsOpen > 0 {
				_, err := w.s.Schedule(lone, 0)
				require.NoError(t, err)
			}
		}}
		_, err := w.s.Schedule(lone, 0)
		require.NoError(t, err)

		var lens, sizes []int
		for _, v := range lone.offers {
			lens, sizes = append(lens, len(v.channels)), append(sizes, v.size)
		}
		require.Equal(t, []int{64, 64, 22}, lens, "at most DefaultMaxOfferChannels listed per offer")
		require.Equal(t, lens, sizes, "alone, it may close every channel it is shown")
		require.Zero(t, w.s.Stats().ChannelsOpen)
		require.Equal(t, peers*perPeer, w.s.Stats().ChannelsClosed, "every channel closed, over three offers")
		// Best first: every peer's first and second channels (50) before
		// any peer's third.
		perPeerInFirst := map[peer.ID]int{}
		for _, id := range lone.offers[0].channels {
			perPeerInFirst[id]++
		}
		require.Len(t, perPeerInFirst, peers)
		for id, n := range perPeerInFirst {
			require.Contains(t, []int{2, 3}, n, "%s listed %d times in the first offer", id, n)
		}
	})

	// An explicit cap lists fewer; a sender alone still closes them all.
	inBubble(t, Config{MaxOfferChannels: 4}, func(w *world) {
		w.connect("A", 5)
		w.connect("B", 5)
		var lone *script
		lone = &script{onOffer: func(o offer.Offer) {
			for i := range o.Size() {
				_, err := o.Request(i, "x", newOutcomes(), time.Minute)
				require.NoError(t, err)
			}
			if w.s.Stats().ChannelsOpen > 0 {
				_, err := w.s.Schedule(lone, 0)
				require.NoError(t, err)
			}
		}}
		_, err := w.s.Schedule(lone, 0)
		require.NoError(t, err)
		var sizes []int
		for _, v := range lone.offers {
			sizes = append(sizes, v.size)
		}
		require.Equal(t, []int{4, 4, 2}, sizes)
		require.Zero(t, w.s.Stats().ChannelsOpen)
	})
}

// peerOf finds which peer a request was sent to, from the hosts' records.
func peerOf(w *world, id peer.RequestID) peer.ID {
	for pid, p := range w.peers {
		for _, m := range p.sends() {
			if m.requestID == id {
				return pid
			}
		}
	}
	return ""
}

func TestPromise04_NoSenderHoldsChannelsItDidNotSendOn(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 2)
		var kept offer.Offer
		greedy := &script{onOffer: func(o offer.Offer) {
			kept = o
			_, err := o.Request(0, "x", newOutcomes(), time.Minute)
			require.NoError(t, err)
		}}
		_, err := w.s.Schedule(greedy, 0)
		require.NoError(t, err)
		require.Equal(t, 1, w.usage("A").ChannelsOpen, "the channel it did not use is open again")
		_, err = kept.Request(1, "later", newOutcomes(), time.Minute)
		require.ErrorIs(t, err, offer.ErrExpired, "an offer cannot be used after its callback")
		require.Zero(t, kept.Len())
		next := &script{}
		_, err = w.s.Schedule(next, 0)
		require.NoError(t, err)
		require.Equal(t, []peer.ID{"A"}, next.offers[0].channels)
	})
}

func TestPromise05_CallbacksAreSerializedAndRunOutsideLocks(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		var inside, overlaps, calls atomic.Int32
		enter := func() {
			if inside.Add(1) != 1 {
				overlaps.Add(1)
			}
			// Taking every lock from inside the callback: this would
			// deadlock (or, with -tags lockorder, panic) if any were held.
			_ = w.s.Stats()
			calls.Add(1)
			inside.Add(-1)
		}
		const peers, perPeer = 8, 4
		var mu sync.Mutex
		var ids []peer.RequestID
		rcv := receiver.Funcs{
			Response: func(peer.RequestID, peer.ID, any) { enter() },
			Failure:  func(peer.RequestID, peer.ID, receiver.Reason) { enter() },
		}
		for i := range peers {
			w.connect(peer.ID(fmt.Sprint("p", i)), perPeer)
		}
		for range peers * perPeer {
			_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
				enter()
				id, err := o.Request(0, "x", rcv, time.Second)
				if err == nil {
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				}
			}}, 0)
			require.NoError(t, err)
		}
		require.Len(t, ids, peers*perPeer)
		// Deliver every response from its own goroutine at once.
		var wg sync.WaitGroup
		for _, id := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = w.s.Deliver(peerOf(w, id), id, "ok")
			}()
		}
		wg.Wait()
		require.Zero(t, overlaps.Load(), "callbacks ran concurrently")
		require.Equal(t, int32(2*peers*perPeer), calls.Load())
		require.Zero(t, w.s.Stats().PanicsHandled)
	})
}

func TestPromise06_ReentrancyFromEveryCallback(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		a := w.connect("A", 2)

		// From OnOffer: schedule a continuation. It is offered before the
		// outermost call (this Schedule) returns.
		continuation := &script{onOffer: sendFirst(rec, time.Minute, &ids)}
		var firstID peer.RequestID
		first := &script{onOffer: func(o offer.Offer) {
			var err error
			firstID, err = o.Request(0, "one", rec, time.Minute)
			require.NoError(t, err)
			_, err = w.s.Schedule(continuation, 0)
			require.NoError(t, err)
			require.Zero(t, continuation.offerCount(), "not while this offer is open")
		}}
		_, err := w.s.Schedule(first, 0)
		require.NoError(t, err)
		require.Equal(t, 1, continuation.offerCount(), "offered before Schedule returned")

		// From the host's send: deliver the response inline. The receiver
		// runs before the outermost call returns, after the send is done.
		var inlineID peer.RequestID
		a.mu.Lock()
		a.onSend = func(requestID peer.RequestID, message any) {
			if message == "inline" {
				require.NoError(t, w.s.Deliver("A", requestID, "inline answer"))
			}
		}
		a.mu.Unlock()
		require.NoError(t, w.s.Deliver("A", ids[0], "free one"))
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			inlineID, err = o.Request(0, "inline", rec, time.Minute)
			require.NoError(t, err)
		}}, 0)
		require.NoError(t, err)
		require.Equal(t, []string{"response from A: inline answer"}, rec.of(inlineID))

		// From a receiver: every public method, Disconnect and Stop included.
		var steps []string
		b := w.connect("B", 1)
		_ = b
		var fromReceiver peer.RequestID
		reentrant := receiver.Funcs{Response: func(id peer.RequestID, from peer.ID, _ any) {
			steps = append(steps, "response")
			_ = w.s.Stats()
			require.False(t, w.s.WithdrawReceiver(id), "already ended")
			// Stop, below, comes before this sender's turn: it is discarded.
			_, err := w.s.Schedule(&script{onDiscard: func() { steps = append(steps, "nested sender discarded") }}, 0)
			require.NoError(t, err)
			require.NoError(t, w.s.Connect(&hostPeer{id: "C"}, 1))
			require.NoError(t, w.s.Disconnect("A"))
			require.ErrorIs(t, w.s.Deliver("B", id, "dup"), receiver.ErrDuplicateResponse)
			w.s.Stop()
			steps = append(steps, "stop returned")
		}}
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			for i := range o.Len() {
				if c, _ := o.Channel(i); c.Peer == "B" {
					fromReceiver, err = o.Request(i, "x", reentrant, time.Minute)
					require.NoError(t, err)
				}
			}
		}}, 0)
		require.NoError(t, err)
		require.NoError(t, w.s.Deliver("B", fromReceiver, "go"))
		require.Equal(t, []string{"response", "stop returned", "nested sender discarded"}, steps)
		require.True(t, w.s.Stats().Stopped, "the nested Stop took effect before Deliver returned")
		require.Equal(t, 1, continuation.offerCount())
		require.Equal(t, []string{"failure from A: disconnected"}, rec.of(firstID))
	})
}

func TestPromise07_LockOrder(t *testing.T) {
	if !lockorder.Enabled {
		// Unchecked builds pay nothing: the scheduler's locks are plain
		// mutexes, and nothing is checked (the checks themselves are
		// tested below, in builds with -tags lockorder, as CI runs them).
		require.Equal(t, unsafe.Sizeof(sync.Mutex{}), unsafe.Sizeof(lockorder.Mutex{}))
		s, err := New(Config{})
		require.NoError(t, err)
		defer s.Stop()
		s.requestsMu.Lock()
		s.offersMu.Lock() // out of order, but not checked here
		require.Zero(t, s.pool.Len())
		s.offersMu.Unlock()
		s.requestsMu.Unlock()
		return
	}
	s, err := New(Config{})
	require.NoError(t, err)
	defer s.Stop()

	// Offers before requests is allowed.
	s.offersMu.Lock()
	s.requestsMu.Lock()
	s.requestsMu.AssertHeld()
	s.requestsMu.Unlock()
	s.offersMu.Unlock()

	expectPanic := func(want []string, f func()) {
		t.Helper()
		defer func() {
			r := recover()
			require.NotNil(t, r, "expected a lock-order panic")
			msg := fmt.Sprint(r)
			for _, name := range want {
				require.Contains(t, msg, name)
			}
		}()
		f()
	}
	// Requests then offers: out of order, both names in the panic.
	expectPanic([]string{`"offers"`, `"requests"`}, func() {
		s.requestsMu.Lock()
		defer s.requestsMu.Unlock()
		s.offersMu.Lock()
	})
	// Taking one lock twice on the same path.
	expectPanic([]string{`"offers"`}, func() {
		s.offersMu.Lock()
		defer s.offersMu.Unlock()
		s.offersMu.Lock()
	})
	// The callback queue is a leaf: nothing may be taken under it.
	expectPanic([]string{`"callbacks"`, `"requests"`}, func() {
		s.callbacksMu.Lock()
		defer s.callbacksMu.Unlock()
		s.requestsMu.Lock()
	})
	// The answers' queue comes first: an answer takes it, then offers
	// (where answers queue: see queueAnswersFrom).
	s.queueAnswers = true
	s.lockForAnswer()
	s.answersMu.AssertHeld()
	s.offersMu.AssertHeld()
	s.unlockAfterAnswer()
	expectPanic([]string{`"answers"`, `"offers"`}, func() {
		s.offersMu.Lock()
		defer s.offersMu.Unlock()
		s.answersMu.Lock()
	})
	// And after the panics the scheduler still works.
	require.NoError(t, s.Connect(&hostPeer{id: "A"}, 1))
}

func TestPromise08_ResponsesAreBoundToTheirRequest(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 2)
		w.connect("B", 2)
		for _, to := range []peer.ID{"A", "A", "B"} {
			_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids, to)}, 0)
			require.NoError(t, err)
		}
		toA, lateA, toB := ids[0], ids[1], ids[2]

		require.ErrorIs(t, w.s.Deliver("B", toA, "spoof"), receiver.ErrWrongPeer)
		require.ErrorIs(t, w.s.Deliver("nobody", toA, "spoof"), receiver.ErrWrongPeer)
		require.ErrorIs(t, w.s.Deliver("A", toA+1<<40, "forged"), receiver.ErrUnknownRequest)
		require.ErrorIs(t, w.s.Deliver("A", 0, "zero"), receiver.ErrUnknownRequest)
		require.ErrorIs(t, w.s.Deliver("A", 999999, "never issued"), receiver.ErrUnknownRequest)
		require.Zero(t, rec.total(), "nothing reached a receiver")
		require.Equal(t, 3, w.s.Stats().RequestsInFlight)

		require.NoError(t, w.s.Deliver("A", toA, "right"))
		require.ErrorIs(t, w.s.Deliver("A", toA, "again"), receiver.ErrDuplicateResponse)

		// A response at its deadline is late, even though the timer, held
		// back here, has not run yet.
		w.holdTimers()
		w.advance(time.Second)
		require.Empty(t, rec.of(lateA), "the timer has not run")
		require.ErrorIs(t, w.s.Deliver("A", lateA, "late"), receiver.ErrLateResponse)
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(lateA))
		require.Equal(t, []string{"failure from B: timeout"}, rec.of(toB), "B's request expired in the same step")
		require.Equal(t, []string{"response from A: right"}, rec.of(toA))

		st := w.s.Stats()
		require.Equal(t, uint64(2), st.WrongPeer)
		require.Equal(t, uint64(3), st.Unknown)
		require.Equal(t, uint64(1), st.Duplicate)
		require.Equal(t, uint64(1), st.Late)
		require.Equal(t, uint64(1), st.Succeeded)
		require.Equal(t, uint64(2), st.TimedOut)
	})
}

func TestPromise09_DisconnectFailsOnlyThatPeersRequestsAtOnce(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 3)
		w.connect("B", 50)
		for range 3 {
			_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Minute, &ids, "A")}, 0)
			require.NoError(t, err)
		}
		for range 50 {
			_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Minute, &ids, "B")}, 0)
			require.NoError(t, err)
		}
		require.Len(t, ids, 53)
		before := w.s.table.Visited()
		require.NoError(t, w.s.Disconnect("A"))
		require.Equal(t, 3, w.s.table.Visited()-before, "the disconnect looked at A's three requests and no others")
		for _, id := range ids[:3] {
			require.Equal(t, []string{"failure from A: disconnected"}, rec.of(id))
		}
		for _, id := range ids[3:] {
			require.Empty(t, rec.of(id))
		}
		require.Equal(t, 50, w.s.Stats().RequestsInFlight)
		require.ErrorIs(t, w.s.Disconnect("A"), peer.ErrUnknownPeer)
	})
}

func TestPromise10_Stop(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 2)
		_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Minute, &ids)}, 0)
		require.NoError(t, err)
		var notes int
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			require.NoError(t, o.Notify(0, "n", time.Minute))
			notes++
		}}, 0)
		require.NoError(t, err)
		waiting := &script{}
		_, err = w.s.Schedule(waiting, 0)
		require.NoError(t, err)

		w.s.Stop()
		// Its callbacks have all run when it returns.
		require.Equal(t, []string{"failure from A: shutdown"}, rec.of(ids[0]))
		require.Equal(t, 1, waiting.discards)
		st := w.s.Stats()
		require.True(t, st.Stopped)
		require.Equal(t, 2, st.ChannelsOpen, "closed channels reopen, so counts still add up")
		require.Zero(t, st.RequestsInFlight)
		require.Zero(t, st.SendersWaiting)

		// New work is refused.
		_, err = w.s.Schedule(&script{}, 0)
		require.ErrorIs(t, err, ErrStopped)
		require.ErrorIs(t, w.s.Connect(&hostPeer{id: "Z"}, 1), ErrStopped)
		require.ErrorIs(t, w.s.Disconnect("A"), ErrStopped)
		require.ErrorIs(t, w.s.Deliver("A", ids[0], "x"), ErrStopped)

		// Idempotent: a second Stop changes nothing and calls nothing.
		w.s.Stop()
		require.Equal(t, 1, waiting.discards)
		require.Equal(t, 1, rec.total())
		w.advance(time.Hour)
		require.Equal(t, 1, rec.total(), "no timer fires after Stop")
	})
}

// TestPromise10_ShutdownWaitsForCallbacksOnOtherGoroutines: Stop changes the
// state at once and waits for nothing, so it cannot deadlock whoever calls
// it; Shutdown waits until the callbacks running or caused have finished and
// the scheduler's goroutine is gone.
func TestPromise10_ShutdownWaitsForCallbacksOnOtherGoroutines(t *testing.T) {
	inBubbleAsIs(t, Config{}, func(w *world) {
		w.connect("A", 1)
		release := make(chan struct{})
		entered := make(chan struct{})
		var finished atomic.Bool
		slow := &script{onOffer: func(o offer.Offer) {
			close(entered)
			<-release
			finished.Store(true)
		}}
		waiting := &script{}
		_, err := w.s.Schedule(slow, 0)
		require.NoError(t, err)
		<-entered
		_, err = w.s.Schedule(waiting, 0)
		require.NoError(t, err)

		w.s.Stop() // returns although a callback is running
		require.True(t, w.s.Stats().Stopped)
		require.Zero(t, w.s.Stats().SendersWaiting, "both senders are out of the queue at once")

		shutdown := make(chan error)
		go func() { shutdown <- w.s.Shutdown(context.Background()) }()
		synctest.Wait()
		select {
		case <-shutdown:
			t.Fatal("Shutdown returned while a callback was still running")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		require.ErrorIs(t, w.s.Shutdown(ctx), context.DeadlineExceeded, "a Shutdown whose context ends first says so")

		close(release)
		require.NoError(t, <-shutdown)
		require.True(t, finished.Load())
		require.Equal(t, 1, slow.discards, "the offered sender sent nothing, so it is discarded when its offer ends")
		require.Equal(t, 1, waiting.discards, "and the waiting one too, before Shutdown returned")
		require.NoError(t, w.s.Shutdown(context.Background()), "idempotent")
	})
}

func TestPromise11_Withdrawal(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		var ids []peer.RequestID
		w.connect("A", 2)
		_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
		require.NoError(t, err)
		_, err = w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
		require.NoError(t, err)
		byResponse, byDeadline := ids[0], ids[1]
		require.True(t, w.s.WithdrawReceiver(byResponse))
		require.True(t, w.s.WithdrawReceiver(byDeadline))
		require.False(t, w.s.WithdrawReceiver(byDeadline), "already withdrawn")
		require.Equal(t, 2, w.usage("A").ChannelsClosed, "withdrawn requests keep their channels")

		require.NoError(t, w.s.Deliver("A", byResponse, "ignored"))
		require.Equal(t, 1, w.usage("A").ChannelsOpen, "the response reopens its channel")
		w.advance(time.Second)
		require.Equal(t, 2, w.usage("A").ChannelsOpen, "the deadline reopens the other")
		require.Zero(t, rec.total(), "no receiver callback after withdrawal")
		require.Equal(t, uint64(2), w.s.Stats().WithdrawnEnded)

		// A waiting sender withdrawn from inside another sender's offer.
		var victimTicket offer.Ticket
		victim := &script{}
		killer := &script{onOffer: func(o offer.Offer) { require.True(t, w.s.WithdrawSender(victimTicket)) }}
		require.NoError(t, w.s.Disconnect("A"))
		_, err = w.s.Schedule(killer, 1)
		require.NoError(t, err)
		victimTicket, err = w.s.Schedule(victim, 0)
		require.NoError(t, err)
		w.connect("B", 1)
		w.s.Stop()
		require.Zero(t, victim.offerCount())
		require.Zero(t, victim.discards)
		require.Equal(t, 1, killer.discards)
	})
}

// TestPromise11_WithdrawingARunningOfferExpiresItAtOnce: a withdrawal does
// not wait for the sender's running OnOffer (its caller may be that very
// call, or something it waits for), but no send through that offer can
// begin after it, and the sender is never called again.
func TestPromise11_WithdrawingARunningOfferExpiresItAtOnce(t *testing.T) {
	inBubbleAsIs(t, Config{}, func(w *world) {
		release := make(chan struct{})
		entered := make(chan struct{})
		var sendErr error
		slow := &script{onOffer: func(o offer.Offer) {
			close(entered)
			<-release
			_, sendErr = o.Request(0, "too late", newOutcomes(), time.Second)
		}}
		ticket, err := w.s.Schedule(slow, 0)
		require.NoError(t, err)
		w.connect("A", 1)
		<-entered
		require.True(t, w.s.WithdrawSender(ticket), "returns while OnOffer runs")
		require.False(t, w.s.WithdrawSender(ticket), "once")
		require.Zero(t, w.s.Stats().SendersWaiting)
		close(release)
		w.settle()
		require.ErrorIs(t, sendErr, offer.ErrExpired, "the withdrawal expired the offer at once")
		require.Equal(t, 1, w.usage("A").ChannelsOpen)
		require.Empty(t, w.peers["A"].sends())
		w.connect("B", 1)
		w.settle()
		require.Equal(t, 1, slow.offerCount(), "never offered again")
		require.Zero(t, slow.discards)
	})
}

func TestPromise12_BadInputGetsAClearErrorAndChangesNothing(t *testing.T) {
	_, err := New(Config{MaxSenders: -1})
	require.ErrorIs(t, err, ErrBadConfig)
	_, err = New(Config{MaxRequests: MaxRequestsLimit + 1})
	require.ErrorIs(t, err, ErrBadConfig)

	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 2)
		before := w.s.Stats()
		require.ErrorIs(t, w.s.Connect(nil, 1), peer.ErrNilPeer)
		require.ErrorIs(t, w.s.Connect(&hostPeer{id: "B"}, 0), peer.ErrBadChannels)
		require.ErrorIs(t, w.s.Connect(&hostPeer{id: "B"}, -1), peer.ErrBadChannels)
		require.ErrorIs(t, w.s.Connect(&hostPeer{id: "A"}, 1), peer.ErrAlreadyConnected)
		require.ErrorIs(t, w.s.Disconnect("nobody"), peer.ErrUnknownPeer)
		_, err := w.s.Schedule(nil, 0)
		require.ErrorIs(t, err, offer.ErrNilSender)
		require.Equal(t, before, w.s.Stats())

		var errs []error
		var kept offer.Offer
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			kept = o
			_, e := o.Request(0, "x", nil, time.Second)
			errs = append(errs, e)
			_, e = o.Request(0, "x", newOutcomes(), 0)
			errs = append(errs, e)
			_, e = o.Request(0, "x", newOutcomes(), -time.Second)
			errs = append(errs, e)
			errs = append(errs, o.Notify(0, "x", 0))
			_, e = o.Request(7, "x", newOutcomes(), time.Second)
			errs = append(errs, e)
			_, e = o.Request(-1, "x", newOutcomes(), time.Second)
			errs = append(errs, e)
			require.Equal(t, 2, o.Remaining(), "nothing was used up")
			require.Equal(t, 2, w.s.Stats().ChannelsOpen)
			_, e = o.Request(0, "x", newOutcomes(), time.Second)
			require.NoError(t, e)
			_, e = o.Request(0, "x", newOutcomes(), time.Second)
			errs = append(errs, e)
		}}, 0)
		require.NoError(t, err)
		_, err = kept.Request(1, "x", newOutcomes(), time.Second)
		errs = append(errs, err)
		_, err = offer.Offer{}.Request(0, "x", newOutcomes(), time.Second)
		errs = append(errs, err)
		want := []error{receiver.ErrNilReceiver, receiver.ErrBadTimeout, receiver.ErrBadTimeout, receiver.ErrBadTimeout, offer.ErrNoSuchChannel, offer.ErrNoSuchChannel, offer.ErrChannelUsed, offer.ErrExpired, offer.ErrExpired}
		require.Len(t, errs, len(want))
		for i := range want {
			require.ErrorIs(t, errs[i], want[i], "case %d", i)
		}
		require.Equal(t, 1, w.s.Stats().ChannelsOpen, "only the one good send closed a channel")

		// A send on a channel whose peer left after the offer was made.
		w.connect("B", 1)
		_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			require.NoError(t, w.s.Disconnect("B"))
			for i := range o.Len() {
				if c, _ := o.Channel(i); c.Peer == "B" {
					_, e := o.Request(i, "x", newOutcomes(), time.Second)
					require.ErrorIs(t, e, offer.ErrPeerGone)
				}
			}
		}}, 0)
		require.NoError(t, err)
	})
}

func TestPromise13_APanickingCallbackCannotBreakTheScheduler(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	inBubble(t, Config{Logger: logger}, func(w *world) {
		a := w.connect("A", 2)
		var ids []peer.RequestID
		boom := receiver.Funcs{
			Response: func(peer.RequestID, peer.ID, any) { panic("receiver exploded") },
			Failure:  func(peer.RequestID, peer.ID, receiver.Reason) { panic("failure exploded") },
		}
		// A sender that sends and then panics: the send counts.
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			id, err := o.Request(0, "x", boom, time.Second)
			require.NoError(t, err)
			ids = append(ids, id)
			panic("sender exploded")
		}}, 0)
		require.NoError(t, err)
		require.Zero(t, w.s.Stats().SendersWaiting)
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))

		// A host whose send panics: treated as a failed send.
		a.mu.Lock()
		a.panics = "host exploded"
		a.mu.Unlock()
		var sendErr error
		hostVictim, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) { _, sendErr = o.Request(0, "x", boom, time.Second) }}, 0)
		require.NoError(t, err)
		require.ErrorIs(t, sendErr, ErrSendPanicked)
		require.True(t, w.s.WithdrawSender(hostVictim), "its send failed, so it still waits")
		a.mu.Lock()
		a.panics = nil
		a.mu.Unlock()

		// Still fully usable: a normal request goes through.
		rec := newOutcomes()
		_, err = w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
		require.NoError(t, err)
		require.NoError(t, w.s.Deliver("A", ids[1], "fine"))
		require.Equal(t, []string{"response from A: fine"}, rec.of(ids[1]))
		w.checkChannels()
		require.Equal(t, 2, w.usage("A").ChannelsOpen)
		st := w.s.Stats()
		require.Equal(t, uint64(3), st.PanicsHandled)
		logMu.Lock()
		out := logs.String()
		logMu.Unlock()
		for _, want := range []string{"sender exploded", "receiver exploded", "host exploded", "Sender.OnOffer", "Receiver.OnResponse", "peer send", "goroutine"} {
			require.Contains(t, out, want)
		}
	})
}

type lockedWriter struct {
	buf *bytes.Buffer
	mu  *sync.Mutex
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func TestPromise14_BoundedMemory(t *testing.T) {
	inBubble(t, Config{MaxSenders: 2, MaxRequests: 3}, func(w *world) {
		_, err := w.s.Schedule(&script{}, 0)
		require.NoError(t, err)
		_, err = w.s.Schedule(&script{}, 0)
		require.NoError(t, err)
		_, err = w.s.Schedule(&script{}, 0)
		require.ErrorIs(t, err, offer.ErrTooManySenders)
		require.Equal(t, 2, w.s.Stats().SendersWaiting)
		w.s.Stop()
	})
	inBubble(t, Config{MaxRequests: 3}, func(w *world) {
		w.connect("A", 5)
		var errs []error
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			for i := range o.Size() {
				_, e := o.Request(i, "x", newOutcomes(), time.Second)
				errs = append(errs, e)
			}
		}}, 0)
		require.NoError(t, err)
		require.Len(t, errs, 5)
		require.NoError(t, errors.Join(errs[:3]...))
		require.ErrorIs(t, errs[3], receiver.ErrTooManyRequests)
		require.ErrorIs(t, errs[4], receiver.ErrTooManyRequests)
		st := w.s.Stats()
		require.Equal(t, 3, st.RequestsInFlight)
		require.Equal(t, 2, st.ChannelsOpen, "a refused request leaves its channel open")
	})
	// A receiver's call owed, not yet started, counts against MaxRequests
	// as its request did: the callback queue is bounded by the cap too.
	inBubble(t, Config{MaxRequests: 2}, func(w *world) {
		w.connect("A", 3)
		rec := newOutcomes()
		var errs []error
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			first, e := o.Request(0, "x", rec, time.Second)
			errs = append(errs, e)
			// Answered at once: its request ends, its call is owed (the
			// drainer is busy here).
			errs = append(errs, w.s.Deliver("A", first, "pong"))
			_, e = o.Request(1, "x", rec, time.Second)
			errs = append(errs, e)
			_, e = o.Request(2, "x", rec, time.Second)
			errs = append(errs, e)
		}}, 0)
		require.NoError(t, err)
		require.Len(t, errs, 4)
		require.NoError(t, errors.Join(errs[:3]...))
		require.ErrorIs(t, errs[3], receiver.ErrTooManyRequests, "one in flight and one call owed make two")
		w.settle()
		require.Equal(t, 1, w.s.Stats().RequestsInFlight)
	})
}

// drivenLimiter is a peer's Limiter that a test drives: each observation is
// recorded and sets the limit to next.
type drivenLimiter struct {
	mu      sync.Mutex
	limit   int
	next    int
	samples []limit.Sample
}

func (l *drivenLimiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

func (l *drivenLimiter) Observe(s limit.Sample) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples = append(l.samples, s)
	l.limit = l.next
}

func (l *drivenLimiter) setNext(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next = n
}

func (l *drivenLimiter) seen() []limit.Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.samples)
}

func TestPromise15_PerPeerLimits(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		l := &drivenLimiter{limit: 3, next: 3}
		a := &hostPeer{id: "A"}
		// At every send the peer's channel has just closed: it had fewer
		// messages in flight than its limit.
		a.onSend = func(peer.RequestID, any) {
			u := w.usage("A")
			require.LessOrEqual(t, u.ChannelsClosed, u.Limit, "a send beyond the peer's limit")
		}
		require.NoError(t, w.s.ConnectWith(a, peer.Options{Limiter: l}))
		w.peers["A"] = a

		// Alone, a sender may close every channel the limit gives.
		var ids []peer.RequestID
		greedy := &script{onOffer: func(o offer.Offer) {
			for i := range o.Size() {
				c, _ := o.Channel(i)
				require.Equal(t, 3, c.Limit, "an offer shows the peer's limit")
				id, err := o.Request(i, "x", rec, time.Second)
				require.NoError(t, err)
				ids = append(ids, id)
			}
		}}
		_, err := w.s.Schedule(greedy, 0)
		require.NoError(t, err)
		require.Len(t, ids, 3)
		require.Equal(t, peer.Usage{ID: "A", Channels: 3, ChannelsClosed: 3, Limit: 3}, w.usage("A"))

		// An answer lowers the limit to 1. Nothing in flight is cancelled:
		// the two others keep their channels, which retire as they end.
		l.setNext(1)
		w.advance(20 * time.Millisecond)
		require.NoError(t, w.s.Deliver("A", ids[0], "first"))
		require.Equal(t, []limit.Sample{{Outcome: limit.Answered, RTT: 20 * time.Millisecond, InFlight: 3, Now: 20 * time.Millisecond}},
			l.seen(), "the limiter sees the answer with its RTT and the peer's messages in flight")
		require.Equal(t, peer.Usage{ID: "A", Channels: 2, ChannelsClosed: 2, Limit: 1, RTT: 20 * time.Millisecond}, w.usage("A"))
		require.Equal(t, 1, rec.total(), "the other two are still in flight")
		waiting := &script{onOffer: sendFirst(rec, time.Second, &ids)}
		_, err = w.s.Schedule(waiting, 0)
		require.NoError(t, err)
		require.NoError(t, w.s.Deliver("A", ids[1], "second"))
		require.Zero(t, waiting.offerCount(), "the channel retired: the peer is at its limit")
		require.Equal(t, peer.Usage{ID: "A", Channels: 1, ChannelsClosed: 1, Limit: 1, RTT: 20 * time.Millisecond}, w.usage("A"))

		// The last one times out, below the limit: its channel reopens, and
		// the waiting sender gets it.
		w.advance(time.Second)
		require.Equal(t, limit.Sample{Outcome: limit.TimedOut, RTT: time.Second, InFlight: 1, Now: time.Second}, l.seen()[2],
			"a timeout is shown too")
		require.Equal(t, 1, waiting.offerCount())
		require.Len(t, ids, 4)
		require.Equal(t, 1, w.usage("A").ChannelsClosed)

		// A higher limit opens channels at once.
		l.setNext(4)
		require.NoError(t, w.s.Deliver("A", ids[3], "fourth"))
		require.Equal(t, peer.Usage{ID: "A", Channels: 4, ChannelsOpen: 4, Limit: 4, RTT: w.usage("A").RTT}, w.usage("A"))

		// Ends that say nothing about the peer's capacity are not shown: a
		// disconnect, a stop, a refused send.
		seen := len(l.seen())
		_, err = w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
		require.NoError(t, err)
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		refused, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
		require.NoError(t, err)
		require.True(t, w.s.WithdrawSender(refused))
		require.NoError(t, w.s.Disconnect("A"))
		require.Len(t, l.seen(), seen)
	})

	// The default is Vegas within the default bounds; bounds are checked.
	inBubble(t, Config{}, func(w *world) {
		require.NoError(t, w.s.ConnectWith(&hostPeer{id: "V"}, peer.Options{}))
		require.Equal(t, peer.DefaultStartLimit, w.usage("V").Limit)
		require.NoError(t, w.s.ConnectWith(&hostPeer{id: "W"}, peer.Options{Bounds: limit.Bounds{Min: 2, Start: 5, Max: 8}}))
		require.Equal(t, 5, w.usage("W").Limit)
		before := w.s.Stats()
		err := w.s.ConnectWith(&hostPeer{id: "X"}, peer.Options{Bounds: limit.Bounds{Min: 2, Start: 1, Max: 8}})
		require.ErrorIs(t, err, limit.ErrBadBounds)
		require.ErrorIs(t, w.s.ConnectWith(nil, peer.Options{}), peer.ErrNilPeer)
		require.Equal(t, before, w.s.Stats())
	})
}

// TestPromise15_ALimiterPanicIsReportedAndTheLimitHolds: a host's limiter is
// called under the scheduler's lock; a panic in it cannot leave the lock
// held, and is reported like a callback's.
func TestPromise15_ALimiterPanicIsReportedAndTheLimitHolds(t *testing.T) {
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logs, &logMu}, nil))
	inBubble(t, Config{Logger: logger}, func(w *world) {
		require.NoError(t, w.s.ConnectWith(&hostPeer{id: "A"}, peer.Options{Limiter: panickyLimiter{}}))
		var ids []peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendFirst(newOutcomes(), time.Second, &ids)}, 0)
		require.NoError(t, err)
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
		require.Equal(t, uint64(1), w.s.Stats().PanicsHandled)
		require.Equal(t, 2, w.usage("A").Limit)
		require.Equal(t, 2, w.usage("A").ChannelsOpen)
		logMu.Lock()
		out := logs.String()
		logMu.Unlock()
		require.Contains(t, out, "limiter exploded")
		require.Contains(t, out, "limit.Limiter")
	})
}

// TestPromise15_AnExplicitRefusalMakesAnAdaptivePeerBackOff: two peers on
// the default adaptive limit (Vegas) get the same traffic, round after
// round; one answers every request in 10ms, the other refuses every one in
// 1ms (Refuse). The refusing peer's limit falls to its floor and stays
// there, and its fast refusals never make it look fast; the answering
// peer's limit grows.
func TestPromise15_AnExplicitRefusalMakesAnAdaptivePeerBackOff(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		for _, id := range []peer.ID{"busy", "fine"} {
			p := &hostPeer{id: id}
			p.onSend = func(peer.RequestID, any) {
				u := w.usage(id)
				require.LessOrEqual(t, u.ChannelsClosed, u.Limit, "a send beyond the peer's limit")
			}
			require.NoError(t, w.s.ConnectWith(p, peer.Options{}))
			w.peers[id] = p
		}
		rec := newOutcomes()
		// fill sends on every open channel of the peer to, and returns the
		// requests' IDs.
		fill := func(to peer.ID) []peer.RequestID {
			var ids []peer.RequestID
			if w.usage(to).ChannelsOpen == 0 {
				return nil
			}
			_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
				for i := range o.Len() {
					if c, _ := o.Channel(i); c.Peer == to {
						id, err := o.Request(i, "x", rec, time.Second)
						require.NoError(t, err)
						ids = append(ids, id)
					}
				}
			}}, 0)
			require.NoError(t, err)
			return ids
		}
		busyLimits := []int{w.usage("busy").Limit}
		for range 12 {
			busy, fine := fill("busy"), fill("fine")
			w.advance(time.Millisecond)
			for _, id := range busy {
				require.NoError(t, w.s.Refuse("busy", id))
			}
			w.advance(9 * time.Millisecond)
			for _, id := range fine {
				require.NoError(t, w.s.Deliver("fine", id, "ok"))
			}
			busyLimits = append(busyLimits, w.usage("busy").Limit)
		}

		require.Equal(t, peer.DefaultStartLimit, busyLimits[0])
		require.True(t, slices.IsSortedFunc(busyLimits, func(a, b int) int { return b - a }), "the refusing peer's limit only falls: %v", busyLimits)
		require.Equal(t, peer.DefaultMinLimit, w.usage("busy").Limit, "it backs off to its floor: %v", busyLimits)
		require.Zero(t, w.usage("busy").RTT, "refusals are no response time")
		require.Greater(t, w.usage("fine").Limit, peer.DefaultStartLimit, "the answering peer's limit grows")
		require.Equal(t, 10*time.Millisecond, w.usage("fine").RTT)

		st := w.s.Stats()
		require.Equal(t, st.Refused+st.Succeeded, st.Sent)
		require.NotZero(t, st.Refused)
		require.Zero(t, st.TimedOut)
	})
}

type panickyLimiter struct{}

func (panickyLimiter) Limit() int           { return 2 }
func (panickyLimiter) Observe(limit.Sample) { panic("limiter exploded") }

func TestPromise16_OneBudgetForTheApplication(t *testing.T) {
	// The cap on messages in flight, over every peer.
	inBubble(t, Config{Budget: Budget{MaxInFlight: 3}}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 2)
		w.connect("B", 2)
		var ids []peer.RequestID
		var sizes []int
		greedy := &script{onOffer: func(o offer.Offer) {
			sizes = append(sizes, o.Size())
			for i := range o.Len() {
				id, err := o.Request(i, "x", rec, time.Second)
				if err != nil {
					require.ErrorIs(t, err, offer.ErrSizeExceeded)
					continue
				}
				ids = append(ids, id)
			}
		}}
		_, err := w.s.Schedule(greedy, 0)
		require.NoError(t, err)
		require.Equal(t, []int{3}, sizes, "alone, it may close what the budget allows, not every open channel")
		require.Len(t, ids, 3)
		require.Equal(t, 1, w.s.Stats().ChannelsOpen)

		// Spent: senders wait, with no error, in priority order.
		low := &script{onOffer: sendFirst(rec, time.Second, &ids)}
		var notified int
		high := &script{onOffer: func(o offer.Offer) {
			require.NoError(t, o.Notify(0, "n", 300*time.Millisecond))
			notified++
		}}
		_, err = w.s.Schedule(low, 0)
		require.NoError(t, err)
		_, err = w.s.Schedule(high, 5)
		require.NoError(t, err)
		require.Zero(t, low.offerCount()+high.offerCount(), "the budget is spent: no offer while a channel is open")
		require.Equal(t, 2, w.s.Stats().SendersWaiting)

		// A message ends: the highest priority goes. Its notification holds
		// the budget while the peer digests it.
		require.NoError(t, w.s.Deliver(peerOf(w, ids[0]), ids[0], "ok"))
		require.Equal(t, 1, notified)
		require.Zero(t, low.offerCount())
		require.Equal(t, 3, w.s.Stats().ChannelsClosed)

		// A disconnect frees its peer's share of the budget too: here, a
		// request and the notification.
		both := peer.ID("A")
		if w.usage("B").ChannelsClosed == 2 {
			both = "B"
		}
		require.Equal(t, 2, w.usage(both).ChannelsClosed, "one peer holds a request and the notification")
		require.NoError(t, w.s.Disconnect(both))
		require.Equal(t, 1, low.offerCount(), "the low sender goes once the budget has room")
		require.Equal(t, 2, w.s.Stats().ChannelsClosed, "the other peer's request and the low sender's")
	})

	// The rate: 10 messages a second in bursts of 2, over every peer.
	inBubble(t, Config{Budget: Budget{Rate: 10, Burst: 2}}, func(w *world) {
		start := w.clock.Now()
		var sentAt []time.Duration // every send the host was asked to make
		a := &hostPeer{id: "A"}
		a.onSend = func(peer.RequestID, any) {
			sentAt = append(sentAt, w.clock.Since(start))
			a.mu.Lock()
			a.fail = nil // a refusal, below, is for one send only
			a.mu.Unlock()
		}
		require.NoError(t, w.s.Connect(a, 10))
		rec := newOutcomes()
		var ids []peer.RequestID
		senders := make([]*script, 5)
		tickets := make([]offer.Ticket, 5)
		for i := range senders {
			senders[i] = &script{onOffer: sendFirst(rec, time.Hour, &ids)}
			var err error
			tickets[i], err = w.s.Schedule(senders[i], 0)
			require.NoError(t, err, "a sender over the budget waits; it gets no error")
		}
		require.Equal(t, []time.Duration{0, 0}, sentAt, "a burst of 2 at once")
		require.Equal(t, 3, w.s.Stats().SendersWaiting)
		w.advance(99 * time.Millisecond)
		require.Len(t, sentAt, 2, "the next token is due at 100ms")
		w.advance(time.Millisecond)
		require.Len(t, sentAt, 3)

		// A send the host refuses costs no token: the next sender goes at
		// once. The refused one sent nothing, so it keeps its place,
		// parked until it asks again.
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		w.advance(100 * time.Millisecond)
		require.Equal(t, []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}, sentAt)
		require.Equal(t, 1, w.s.Stats().SendersWaiting)
		require.Equal(t, uint64(4), w.s.Stats().Sent)
		w.advance(time.Second)
		require.Len(t, sentAt, 5)
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
		require.Len(t, sentAt, 5, "a channel opened, but the refused sender is parked")
		require.True(t, w.s.Reoffer(tickets[3]))
		require.Equal(t, 1200*time.Millisecond, sentAt[5], "it asked again, and the bucket is full again")
		require.Equal(t, 2, senders[3].offerCount())
		require.Zero(t, w.s.Stats().SendersWaiting)
	})

	_, err := New(Config{Budget: Budget{MaxInFlight: -1}})
	require.ErrorIs(t, err, ErrBadConfig)
	_, err = New(Config{Budget: Budget{Burst: 3}})
	require.ErrorIs(t, err, ErrBadConfig, "a burst needs a rate")
	_, err = New(Config{Budget: Budget{Rate: 1, Burst: limit.MaxBurst + 1}})
	require.ErrorIs(t, err, ErrBadConfig)
	for _, b := range []Budget{
		{ByteRate: -1, ByteBurst: 10},
		{ByteRate: 10, ByteBurst: -1},
		{ByteRate: 10},            // a byte rate needs a byte burst: the largest size a sender may declare
		{ByteBurst: 10},           // and a byte burst needs a byte rate
		{Rate: 10, ByteBurst: 10}, // a message rate is no byte rate
		{ByteRate: 1, ByteBurst: limit.MaxBurst + 1},
	} {
		_, err = New(Config{Budget: b})
		require.ErrorIs(t, err, ErrBadConfig, "%+v", b)
	}
}

// TestPromise16_BytesPerSecond: the budget's byte rate, counted at the
// sizes senders declare, is never exceeded; senders it cannot pay for wait
// in the queue, in their order, without errors.
func TestPromise16_BytesPerSecond(t *testing.T) {
	// A byte every millisecond, up to 1000 at once.
	inBubble(t, Config{Budget: Budget{ByteRate: 1000, ByteBurst: 1000}}, func(w *world) {
		start := w.clock.Now()
		// Every send the host was asked to make: when, and the size its
		// sender declared, which each message carries.
		var sentAt []time.Duration
		var sentBytes []int64
		a := &hostPeer{id: "A"}
		a.onSend = func(_ peer.RequestID, message any) {
			sentAt = append(sentAt, w.clock.Since(start))
			sentBytes = append(sentBytes, message.(int64))
			a.mu.Lock()
			a.fail = nil // a refusal, below, is for one send only
			a.mu.Unlock()
		}
		require.NoError(t, w.s.Connect(a, 20))
		rec := newOutcomes()
		var ids []peer.RequestID
		var order []string
		// sender sends up to n messages of its declared size.
		sender := func(name string, bytes int64, n int) *script {
			return &script{name: name, onOffer: func(o offer.Offer) {
				order = append(order, fmt.Sprintf("%s:%d", name, o.Size()))
				for i := range min(o.Len(), n) {
					id, err := o.Request(i, bytes, rec, time.Hour)
					if err != nil {
						if !errors.Is(err, errRefused) {
							require.ErrorIs(t, err, offer.ErrSizeExceeded)
						}
						return
					}
					ids = append(ids, id)
				}
			}}
		}
		schedule := func(snd *script, priority int, bytes int64) offer.Ticket {
			t.Helper()
			tk, err := w.s.ScheduleWith(snd, priority, offer.Options{Bytes: bytes})
			require.NoError(t, err, "a sender over the budget waits; it gets no error")
			return tk
		}
		at := func(d time.Duration) {
			t.Helper()
			w.advance(d - w.clock.Since(start))
		}

		// Alone, a sender of 400 bytes may send what the bytes pay for: 2
		// of 20 open channels.
		schedule(sender("g", 400, 3), 0, 400)
		require.Equal(t, []string{"g:2"}, order)

		// 200 bytes left: a sender of 400 waits, and one that declares
		// nothing waits behind it, rather than go first.
		schedule(sender("b", 400, 1), 0, 400)
		schedule(sender("z", 0, 1), 0, 0)
		require.Equal(t, []string{"g:2"}, order)
		require.Equal(t, 2, w.s.Stats().SendersWaiting)
		at(199 * time.Millisecond)
		require.Equal(t, []string{"g:2"}, order, "399 bytes: one short")
		at(200 * time.Millisecond)
		require.Equal(t, []string{"g:2", "b:1", "z:17"}, order, "in their order, once the bytes are there")

		// Priority first: a sender of 500 at a higher priority goes before
		// one of 300 that came first, though the 300 are there sooner.
		schedule(sender("low", 300, 1), 0, 300)
		schedule(sender("high", 500, 1), 5, 500)
		at(500 * time.Millisecond)
		require.Len(t, order, 3, "the high sender waits for its 500 bytes; the low one waits behind it")
		at(700 * time.Millisecond)
		require.Equal(t, []string{"g:2", "b:1", "z:17", "high:1"}, order)

		// A send the host refuses costs no bytes: they are back for the
		// next sender at once. The refused sender sent nothing, so it
		// keeps its place, passed over until a channel opens.
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		at(1000 * time.Millisecond)
		require.Equal(t, []string{"g:2", "b:1", "z:17", "high:1", "low:1"}, order)
		schedule(sender("m", 300, 1), 0, 300)
		require.Equal(t, []string{"g:2", "b:1", "z:17", "high:1", "low:1", "m:1"}, order, "the refused send's bytes paid for m")

		// A large sender at the head holds up a small one behind it until
		// it is withdrawn; then the small one goes as soon as its bytes
		// are there.
		big := schedule(sender("big", 1000, 1), 9, 1000)
		schedule(sender("small", 100, 1), 0, 100)
		at(1050 * time.Millisecond)
		require.Len(t, order, 6)
		require.True(t, w.s.WithdrawSender(big))
		require.Len(t, order, 6, "50 bytes: not yet")
		at(1100 * time.Millisecond)
		require.Equal(t, "small:1", order[len(order)-1], "the timer was armed for the small sender's bytes, not the big one's")

		require.Equal(t, []int64{400, 400, 400, 0, 500, 300, 300, 100}, sentBytes, "the host was asked for every send, the refused one too")
		require.Equal(t, []time.Duration{0, 0, 200 * time.Millisecond, 200 * time.Millisecond, 700 * time.Millisecond,
			1000 * time.Millisecond, 1000 * time.Millisecond, 1100 * time.Millisecond}, sentAt)
		// The promise itself, over every window of the accepted sends (the
		// refused one, the sixth, spent nothing).
		accepted := slices.Delete(slices.Clone(sentAt), 5, 6)
		acceptedBytes := slices.Delete(slices.Clone(sentBytes), 5, 6)
		require.Empty(t, overspent(accepted, acceptedBytes, 1000, 1000))
		require.NotEmpty(t, overspent(sentAt, sentBytes, 1000, 1000), "counted as spent, the refused send would have overspent: the check can fail")
		require.Equal(t, 1, w.s.Stats().SendersWaiting, "low, passed over since its send was refused")

		// Bad sizes are refused, and change nothing.
		before := w.s.Stats()
		for _, bytes := range []int64{-1, 1001, math.MaxInt64} {
			_, err := w.s.ScheduleWith(&script{}, 0, offer.Options{Bytes: bytes})
			require.ErrorIs(t, err, ErrBadBytes, "%d bytes", bytes)
		}
		require.Equal(t, before, w.s.Stats())
		_, err := w.s.ScheduleWith(nil, 0, offer.Options{Bytes: -1})
		require.ErrorIs(t, err, offer.ErrNilSender, "a nil sender is the first thing checked")
	})

	// Without a byte rate a size is not used: any size that is not
	// negative is taken, and nothing waits for bytes.
	inBubble(t, Config{Budget: Budget{MaxInFlight: 5}}, func(w *world) {
		w.connect("A", 10)
		var sizes []int
		_, err := w.s.ScheduleWith(&script{onOffer: func(o offer.Offer) { sizes = append(sizes, o.Size()) }}, 0,
			offer.Options{Bytes: math.MaxInt64})
		require.NoError(t, err)
		require.Equal(t, []int{5}, sizes)
		_, err = w.s.ScheduleWith(&script{}, 0, offer.Options{Bytes: -1})
		require.ErrorIs(t, err, ErrBadBytes)
	})
}

func TestPromise17_ClassBooking(t *testing.T) {
	classes := []limit.Class{
		{Name: "total", Limit: 3},
		{Name: "ledger", Limit: 2, Parent: "total"},
		{Name: "fetch", Limit: 1, Parent: "ledger"},
		{Name: "tx", Limit: limit.Unlimited, Parent: "total"},
	}
	inBubble(t, Config{Classes: classes}, func(w *world) {
		held := func() map[string]int {
			out := map[string]int{}
			for _, c := range w.s.ClassUsage(nil) {
				out[c.Name] = c.InFlight
				require.LessOrEqual(t, c.InFlight, c.Limit, "class %s", c.Name)
			}
			return out
		}
		rec := newOutcomes()
		a := w.connect("A", 10)
		var ids []peer.RequestID
		var order []string
		greedy := func(name string) *script {
			return &script{name: name, onOffer: func(o offer.Offer) {
				order = append(order, fmt.Sprintf("%s:%d", name, o.Size()))
				for i := range o.Size() {
					id, err := o.Request(i, name, rec, time.Second)
					if err != nil {
						require.ErrorIs(t, err, errRefused)
						order = append(order, name+":refused")
						continue
					}
					ids = append(ids, id)
				}
			}}
		}
		schedule := func(snd *script, priority int, class string) offer.Ticket {
			t.Helper()
			tk, err := w.s.ScheduleWith(snd, priority, offer.Options{Class: class})
			require.NoError(t, err)
			return tk
		}

		// Alone, a sender may send only as much as its class has room for.
		schedule(greedy("fetch1"), 5, "fetch")
		require.Equal(t, []string{"fetch1:1"}, order, "10 channels open, room for 1 in fetch")
		require.Equal(t, map[string]int{"total": 1, "ledger": 1, "fetch": 1, "tx": 0}, held(), "booked in the class and every ancestor")

		// A sender whose class is full is passed over, keeping its place.
		fetch2 := greedy("fetch2")
		fetch2Ticket := schedule(fetch2, 5, "fetch")
		schedule(greedy("ledger1"), 0, "ledger")
		schedule(greedy("tx1"), 0, "tx")
		schedule(greedy("plain"), 0, "")
		require.Equal(t, []string{"fetch1:1", "ledger1:1", "tx1:1", "plain:1"}, order)
		require.Zero(t, fetch2.offerCount())
		require.Equal(t, map[string]int{"total": 3, "ledger": 2, "fetch": 1, "tx": 1}, held())

		// The parent caps its children together: tx has no limit of its
		// own, but total is full.
		tx2 := greedy("tx2")
		schedule(tx2, 9, "tx")
		require.Zero(t, tx2.offerCount())
		require.Equal(t, 2, w.s.Stats().SendersWaiting)

		// A response releases fetch1's booking: fetch and ledger have room,
		// and so has total, once; the highest priority goes first.
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
		require.Equal(t, []string{"fetch1:1", "ledger1:1", "tx1:1", "plain:1", "tx2:1"}, order)
		require.Equal(t, map[string]int{"total": 3, "ledger": 1, "fetch": 0, "tx": 2}, held())

		// A refused send is undone: its booking with it.
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		require.NoError(t, w.s.Deliver("A", ids[2], "tx1 done")) // total has room for fetch2 now
		require.Equal(t, 1, fetch2.offerCount())
		require.Equal(t, map[string]int{"total": 2, "ledger": 1, "fetch": 0, "tx": 1}, held(), "the refused send booked nothing")
		a.mu.Lock()
		a.fail = nil
		a.mu.Unlock()

		// A timeout releases, and so does a disconnect; a notification
		// holds its class until the peer has digested it.
		w.advance(time.Second) // ledger1's and tx2's requests time out
		require.Equal(t, 1, fetch2.offerCount(), "fetch2, which sent nothing, is parked")
		require.True(t, w.s.Reoffer(fetch2Ticket))
		require.Equal(t, 2, fetch2.offerCount(), "fetch2 asked again, is offered again, and sends")
		require.Equal(t, map[string]int{"total": 1, "ledger": 1, "fetch": 1, "tx": 0}, held(), "the timeouts released theirs")
		schedule(&script{onOffer: func(o offer.Offer) { require.NoError(t, o.Notify(0, "n", 50*time.Millisecond)) }}, 0, "tx")
		require.Equal(t, map[string]int{"total": 2, "ledger": 1, "fetch": 1, "tx": 1}, held())
		w.advance(50 * time.Millisecond)
		require.Equal(t, map[string]int{"total": 1, "ledger": 1, "fetch": 1, "tx": 0}, held(), "digested")
		require.NoError(t, w.s.Disconnect(peerOf(w, ids[len(ids)-1])))
		require.Equal(t, map[string]int{"total": 0, "ledger": 0, "fetch": 0, "tx": 0}, held())

		// Stop releases what is left, once.
		w.connect("B", 2)
		schedule(greedy("last"), 0, "ledger")
		require.Equal(t, map[string]int{"total": 2, "ledger": 2, "fetch": 0, "tx": 0}, held(), "alone, up to the room in ledger")
		w.s.Stop()
		require.Equal(t, map[string]int{"total": 0, "ledger": 0, "fetch": 0, "tx": 0}, held())
		require.Zero(t, w.s.bookingErrors, "no booking or release was refused: each was released once")

		_, err := w.s.ScheduleWith(&script{}, 0, offer.Options{Class: "nope"})
		require.ErrorIs(t, err, ErrStopped)
	})

	inBubble(t, Config{Classes: classes}, func(w *world) {
		before := w.s.Stats()
		_, err := w.s.ScheduleWith(&script{}, 0, offer.Options{Class: "nope"})
		require.ErrorIs(t, err, limit.ErrUnknownClass)
		require.Equal(t, before, w.s.Stats())
	})
	_, err := New(Config{Classes: []limit.Class{{Name: "a", Limit: 1, Parent: "b"}}})
	require.ErrorIs(t, err, ErrBadConfig)
	require.ErrorIs(t, err, limit.ErrUnknownClass)
	s, err := New(Config{})
	require.NoError(t, err)
	_, err = s.ScheduleWith(&script{}, 0, offer.Options{Class: "any"})
	require.ErrorIs(t, err, limit.ErrUnknownClass, "no classes are declared")
	s.Stop()
}

// TestPromise18_NoStarvation: under a continuous high-priority stream that
// keeps every channel busy, a low-priority sender is offered a channel
// within the documented bound (Config.PassOverLimit + 1 offers for a level
// that has not been passed over before, PassOverLimit + 3 at worst with two
// levels), and the high priority keeps its documented share,
// PassOverLimit/(PassOverLimit+1) of the offers; with strict priorities the
// low sender waits as long as the stream lasts.
func TestPromise18_NoStarvation(t *testing.T) {
	const offers = 800
	// run keeps two senders of priority 5 waiting at all times (each that
	// sends is replaced), and one of priority 0 if lowStream, else a single
	// low sender; one channel, so every answer makes exactly one offer. It
	// returns the priority of each offer's sender, in order.
	run := func(cfg Config, lowStream bool) []int {
		var order []int
		inBubble(t, cfg, func(w *world) {
			rec := newOutcomes()
			var ids []peer.RequestID
			var stream func(priority int, again bool) *script
			stream = func(priority int, again bool) *script {
				return &script{onOffer: func(o offer.Offer) {
					id, err := o.Request(0, "x", rec, time.Hour)
					require.NoError(t, err)
					ids = append(ids, id)
					order = append(order, priority)
					if again {
						_, err = w.s.Schedule(stream(priority, again), priority)
						require.NoError(t, err)
					}
				}}
			}
			for _, p := range []int{0, 5, 5} {
				_, err := w.s.Schedule(stream(p, p == 5 || lowStream), p)
				require.NoError(t, err)
			}
			w.connect("A", 1)
			for len(order) < offers {
				id := ids[len(order)-1]
				require.NoError(t, w.s.Deliver("A", id, "ok"))
			}
		})
		return order
	}
	k := DefaultPassOverLimit

	order := run(Config{}, false)
	first := slices.Index(order, 0)
	require.Equal(t, k, first, "the low sender gets the offer after %d to the high stream: %v", k, order[:first+1])
	require.LessOrEqual(t, first+1, k+3, "the documented bound for two levels")

	order = run(Config{}, true)
	high, last := 0, -1
	for i, p := range order {
		if p == 5 {
			high++
			continue
		}
		require.LessOrEqual(t, i-last, k+3, "offer %d: the low stream waited longer than the bound", i)
		last = i
	}
	share := float64(high) / float64(len(order))
	require.GreaterOrEqual(t, share, float64(k)/float64(k+1), "the high stream's share")
	require.Less(t, share, 1.0)

	// A smaller limit, a quicker turn.
	order = run(Config{PassOverLimit: 2}, false)
	require.Equal(t, 2, slices.Index(order, 0))

	// Strict priorities: the low sender starves for as long as the stream
	// lasts.
	order = run(Config{PassOverLimit: -1}, false)
	require.NotContains(t, order, 0)
}

// slowOutcomes records OnSlow beside the final outcomes.
type slowOutcomes struct{ *outcomes }

func (o slowOutcomes) OnSlow(id peer.RequestID, from peer.ID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[id] = append(o.calls[id], fmt.Sprintf("slow at %s", from))
}

// TestPromise19_TwoPhaseDeadlines: a request with a soft deadline is reported
// slow to its receiver at most once, stays live and keeps its channel until
// its response, its hard deadline, a disconnect or a stop, and still ends
// exactly once; the sender may meanwhile ask another peer.
func TestPromise19_TwoPhaseDeadlines(t *testing.T) {
	const soft, hard = 100 * time.Millisecond, time.Second
	// send requests once, on the first open channel of peer to, with both
	// deadlines, through a sender of its own.
	send := func(w *world, r receiver.Receiver, to peer.ID) peer.RequestID {
		var id peer.RequestID
		snd := &script{onOffer: func(o offer.Offer) {
			for i := range o.Len() {
				if c, _ := o.Channel(i); c.Peer == to {
					var err error
					id, err = o.RequestSoft(i, "x", r, soft, hard)
					require.NoError(t, err)
					return
				}
			}
		}}
		_, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		settleScheduler(w.s)
		require.NotZero(t, id)
		return id
	}

	inEachMode(t, Config{}, func(w *world) {
		rec := slowOutcomes{newOutcomes()}
		w.connect("A", 1)
		w.connect("B", 1)

		// Slow, then answered: OnSlow once, the channel kept; a hedge to
		// B meanwhile; the first answer is the request's one outcome.
		id := send(w, rec, "A")
		w.advance(soft - time.Millisecond)
		require.Empty(t, rec.of(id))
		w.advance(time.Millisecond)
		require.Equal(t, []string{"slow at A"}, rec.of(id))
		require.Equal(t, 1, w.s.Stats().RequestsInFlight, "still live")
		require.Equal(t, 1, w.s.Stats().ChannelsClosed, "and A's channel stays closed")
		hedge := send(w, rec, "B")
		w.advance(200 * time.Millisecond)
		require.Equal(t, []string{"slow at A"}, rec.of(id), "reported once")
		require.NoError(t, w.s.Deliver("A", id, "late but in time"))
		settleScheduler(w.s)
		require.Equal(t, []string{"slow at A", "response from A: late but in time"}, rec.of(id))
		require.True(t, w.s.WithdrawReceiver(hedge), "the hedge is withdrawn, its answer no longer wanted")
		require.NoError(t, w.s.Deliver("B", hedge, "too late"))
		w.advance(2 * hard)
		require.Equal(t, []string{"slow at B"}, rec.of(hedge), "withdrawn after its own slow report: nothing more")

		// Slow, then the hard deadline: the timeout is the outcome.
		id = send(w, rec, "A")
		w.advance(hard)
		require.Equal(t, []string{"slow at A", "failure from A: timeout"}, rec.of(id))

		// Slow, then a disconnect.
		id = send(w, rec, "A")
		w.advance(soft)
		require.NoError(t, w.s.Disconnect("A"))
		settleScheduler(w.s)
		require.Equal(t, []string{"slow at A", "failure from A: disconnected"}, rec.of(id))

		// Answered in time: never slow.
		id = send(w, rec, "B")
		require.NoError(t, w.s.Deliver("B", id, "quick"))
		w.advance(2 * hard)
		require.Equal(t, []string{"response from B: quick"}, rec.of(id))

		// Withdrawn before its soft deadline: no call at all.
		id = send(w, rec, "B")
		require.True(t, w.s.WithdrawReceiver(id))
		w.advance(2 * hard)
		require.Empty(t, rec.of(id))

		// A receiver that is no SlowReceiver is not told, and the request
		// still ends at its hard deadline.
		plain := newOutcomes()
		id = send(w, plain, "B")
		w.advance(hard)
		require.Equal(t, []string{"failure from B: timeout"}, plain.of(id))

		// A stop ends a slow request once, as shut down.
		id = send(w, rec, "B")
		w.advance(soft)
		w.s.Stop()
		settleScheduler(w.s)
		require.Equal(t, []string{"slow at B", "failure from B: shutdown"}, rec.of(id))
	})

	// Bad deadlines: a clear error, and the channel stays open.
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 1)
		var errs []error
		snd := &script{onOffer: func(o offer.Offer) {
			for _, d := range [][2]time.Duration{{0, hard}, {-soft, hard}, {hard, hard}, {2 * hard, hard}} {
				_, err := o.RequestSoft(0, "x", newOutcomes(), d[0], d[1])
				errs = append(errs, err)
			}
			// Send takes a Soft of 0 as none, and refuses the others.
			for _, d := range [][2]time.Duration{{0, 0}, {-soft, hard}, {hard, hard}, {2 * hard, hard}, {soft, 0}} {
				_, err := o.Send(0, offer.Request{Message: "x", Receiver: newOutcomes(), Soft: d[0], Timeout: d[1]})
				errs = append(errs, err)
			}
		}}
		_, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		require.Len(t, errs, 9)
		for _, err := range errs {
			require.ErrorIs(t, err, receiver.ErrBadTimeout)
		}
		require.Equal(t, 1, w.s.Stats().ChannelsOpen)
	})
}

// TestPromise21_EachPeerIsKeptWithinItsRate: a peer connected with a Rate
// is never offered a channel whose message would take it over that rate,
// in its own units; senders wait without errors and are offered its
// channels when its rate pays again; a send the host refuses gives its
// charge back; a peer without a Rate is not held; a bad Rate is refused
// and changes nothing. In both callback modes.
func TestPromise21_EachPeerIsKeptWithinItsRate(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			promise21(t, inline)
		})
	}
}

func promise21(t *testing.T, inline bool) {
	// 250 units a message, 1,000 a second: one message every 250ms, after
	// a burst of two.
	rate := limit.Rate{Cost: 250, PerSecond: 1000, Burst: 500}
	inBubbleAsIs(t, Config{InlineCallbacks: inline}, func(w *world) {
		start := w.clock.Now()
		var tried, accepted []time.Duration // the sends the host was asked to make, and those it took
		a := &hostPeer{id: "A"}
		a.onSend = func(peer.RequestID, any) {
			at := w.clock.Since(start)
			tried = append(tried, at)
			a.mu.Lock()
			if a.fail == nil {
				accepted = append(accepted, at)
			}
			a.fail = nil // a refusal, below, is for one send only
			a.mu.Unlock()
		}
		fixed8 := limit.Bounds{Min: 8, Start: 8, Max: 8}
		require.NoError(t, w.s.ConnectWith(a, peer.Options{Bounds: fixed8, Rate: rate}))
		w.settle()
		require.Equal(t, peer.Usage{ID: "A", Channels: 2, ChannelsOpen: 2, Limit: 8}, w.usage("A"),
			"a full bucket pays for two messages: two channels open of the limit's eight")

		rec := newOutcomes()
		var ids []peer.RequestID
		senders := make([]*script, 6)
		tickets := make([]offer.Ticket, 6)
		for i := range senders {
			senders[i] = &script{onOffer: sendFirst(rec, time.Hour, &ids)}
			var err error
			tickets[i], err = w.s.Schedule(senders[i], 0)
			require.NoError(t, err, "a sender the peer's rate cannot pay for waits; it gets no error")
			w.settle()
		}
		require.Equal(t, []time.Duration{0, 0}, tried, "the burst of two at once")
		require.Equal(t, 4, w.s.Stats().SendersWaiting)
		require.Equal(t, peer.Usage{ID: "A", Channels: 2, ChannelsClosed: 2, Limit: 8}, w.usage("A"),
			"held by its rate: none of its channels is open")

		// An answer ends a message, but the rate still binds: nothing opens.
		require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
		w.settle()
		require.Len(t, tried, 2)
		require.Zero(t, w.s.Stats().ChannelsOpen)

		// The timer fires when the bucket pays for the next message.
		w.advance(249 * time.Millisecond)
		w.settle()
		require.Len(t, tried, 2)
		w.advance(time.Millisecond)
		w.settle()
		require.Equal(t, []time.Duration{0, 0, 250 * time.Millisecond}, tried)
		w.advance(250 * time.Millisecond)
		w.settle()
		require.Len(t, tried, 4)

		// A send the host refuses costs the peer nothing: the next sender
		// goes at once, in the same instant.
		a.mu.Lock()
		a.fail = errRefused
		a.mu.Unlock()
		w.advance(250 * time.Millisecond)
		w.settle()
		require.Equal(t, []time.Duration{0, 0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond}, tried)
		require.Equal(t, []time.Duration{0, 0, 250 * time.Millisecond, 500 * time.Millisecond, 750 * time.Millisecond}, accepted)
		require.Equal(t, uint64(5), w.s.Stats().Sent)
		require.Equal(t, 1, rec.total(), "one answer, to the one response: the pacing fails nothing")

		// Over any window, what the peer took costs at most its burst plus
		// its rate times the window.
		costs := slices.Repeat([]int64{rate.Cost}, len(accepted))
		require.Empty(t, overspent(accepted, costs, rate.PerSecond, rate.Burst))

		// The refused sender is parked; asked again, it waits for the rate
		// like anyone, then goes.
		require.True(t, w.s.Reoffer(tickets[4]))
		w.settle()
		require.Len(t, tried, 6, "the rate has not paid yet")
		w.advance(250 * time.Millisecond)
		w.settle()
		require.Len(t, tried, 7)
		require.Zero(t, w.s.Stats().SendersWaiting)

		// A peer without a Rate is not held: a sender goes to it at once,
		// while A is.
		b := w.connect("B", 1)
		late := &script{onOffer: sendFirst(rec, time.Hour, &ids)}
		_, err := w.s.Schedule(late, 0)
		require.NoError(t, err)
		w.settle()
		require.Equal(t, 1, late.offerCount())
		require.Len(t, b.sent, 1)

		// A bad Rate is refused and changes nothing.
		before := w.s.Stats()
		for _, bad := range []limit.Rate{{Cost: 0, PerSecond: 1, Burst: 1}, {Cost: 2, PerSecond: 1, Burst: 1}, {Cost: 1, PerSecond: -1, Burst: 1}} {
			err := w.s.ConnectWith(&hostPeer{id: "C"}, peer.Options{Rate: bad})
			require.ErrorIs(t, err, limit.ErrBadRate, "%+v", bad)
		}
		require.Equal(t, before, w.s.Stats())
		require.Len(t, w.s.PeerUsage(nil), 2)

		// A disconnect forgets the pacing: the peer reconnected has a full
		// bucket, and its hold left behind fires harmlessly.
		require.NoError(t, w.s.Disconnect("A"))
		a2 := &hostPeer{id: "A"}
		require.NoError(t, w.s.ConnectWith(a2, peer.Options{Bounds: fixed8, Rate: rate}))
		w.settle()
		require.Equal(t, 2, w.usage("A").ChannelsOpen)
		w.advance(time.Second)
		w.settle()
		require.Equal(t, 2, w.usage("A").ChannelsOpen)
	})
}

// TestAnswersQueueOnManyProcessors checks that a scheduler made with
// queueAnswersFrom processors or more queues its answers on answersMu
// before the offers lock, and one made with fewer does not, so that an
// answer alone pays no lock more there (see lockForAnswer); and that an
// answer is the same either way.
func TestAnswersQueueOnManyProcessors(t *testing.T) {
	for _, procs := range []int{queueAnswersFrom, queueAnswersFrom - 1} {
		t.Run(fmt.Sprintf("GOMAXPROCS=%d", procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			inBubble(t, Config{}, func(w *world) {
				require.Equal(t, procs >= queueAnswersFrom, w.s.queueAnswers)
				rec := newOutcomes()
				w.connect("A", 1)
				var ids []peer.RequestID
				_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Minute, &ids, "A")}, 0)
				require.NoError(t, err)
				require.Len(t, ids, 1)
				require.NoError(t, w.s.Deliver("A", ids[0], "ok"))
				require.Equal(t, []string{"response from A: ok"}, rec.of(ids[0]))
				require.ErrorIs(t, w.s.Deliver("A", ids[0], "again"), receiver.ErrDuplicateResponse)

				// An answer from inside a callback an answer caused
				// (promise 6): the queue is not held while callbacks run.
				_, err = w.s.Schedule(&script{onOffer: func(o offer.Offer) {
					_, err := o.Request(0, "ping", nestedDeliver{w.s, rec}, time.Minute)
					require.NoError(t, err)
				}}, 0)
				require.NoError(t, err)
				sent := w.peers["A"].sends()
				first := sent[len(sent)-1].requestID
				require.NoError(t, w.s.Deliver("A", first, "outer"))
				require.Equal(t, []string{"response from A: inner"}, rec.of(first),
					"the receiver answered its own request again from inside the callback: a duplicate, dropped")
			})
		})
	}
}

// nestedDeliver is a receiver that, told of a response, delivers another
// for the same request from inside its callback, which the scheduler drops
// as a duplicate, and records the outcome in outcomes.
type nestedDeliver struct {
	s   *Scheduler
	rec *outcomes
}

func (n nestedDeliver) OnResponse(id peer.RequestID, from peer.ID, _ any) {
	err := n.s.Deliver(from, id, "again")
	if errors.Is(err, receiver.ErrDuplicateResponse) {
		n.rec.OnResponse(id, from, "inner")
	}
}

func (n nestedDeliver) OnFailure(id peer.RequestID, from peer.ID, reason receiver.Reason) {
	n.rec.OnFailure(id, from, reason)
}

package scheduler

// Tests of where callbacks run and of the defects the callback-identity
// issue listed (D1-D4, E1, E2). Each runs with callbacks on the scheduler's
// goroutine (the default) and inline. A deadlock in a synctest bubble fails
// the test ("all goroutines in the bubble are blocked") instead of hanging.

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// inEachMode runs body in a bubble once per callback mode.
func inEachMode(t *testing.T, cfg Config, body func(w *world)) {
	for _, inline := range []bool{false, true} {
		name := "own-goroutine"
		if inline {
			name = "inline"
		}
		t.Run(name, func(t *testing.T) {
			cfg := cfg
			cfg.InlineCallbacks = inline
			inBubbleAsIs(t, cfg, body)
		})
	}
}

// connectBlocking connects a peer of one channel whose first send blocks
// until finishSend is closed, after closing inSend; the send then fails if
// fails is set.
func (w *world) connectBlocking(id peer.ID, fails bool) (a *hostPeer, inSend, finishSend chan struct{}) {
	a = w.connect(id, 1)
	inSend, finishSend = make(chan struct{}), make(chan struct{})
	a.onSend = func(peer.RequestID, any) {
		close(inSend)
		<-finishSend
	}
	if fails {
		a.fail = errRefused
	}
	return a, inSend, finishSend
}

// D1: a sender sends from a helper goroutine while OnOffer waits for it, and
// the host's Send (on that helper) stops the scheduler. Stop used to wait for
// the callbacks to finish, and OnOffer was waiting for Stop.
func TestRegression_StopFromAHostSendOnAHelperGoroutine(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		rec := newOutcomes()
		a := w.connect("A", 1)
		a.onSend = func(peer.RequestID, any) { w.s.Stop() }
		var id peer.RequestID
		var sendErr error
		snd := &script{onOffer: func(o offer.Offer) {
			done := make(chan struct{})
			go func() {
				id, sendErr = o.Request(0, "x", rec, time.Second)
				close(done)
			}()
			<-done
		}}
		_, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		w.settle()
		require.True(t, w.s.Stats().Stopped, "the host's send stopped it")
		require.NoError(t, w.s.Shutdown(context.Background()))
		require.NoError(t, sendErr, "the host accepted the send before Stop took effect")
		require.Equal(t, []string{"failure from A: shutdown"}, rec.of(id), "the request still has its one outcome")
		require.Zero(t, snd.discards, "the sender left by its send")
	})
}

// D2: "inside a callback" was any scheduler's callback. A callback of X that
// shuts Y down, while a callback of Y runs on another goroutine, must wait
// for that callback and for the discards Y's stop causes; withdrawing Y's
// offered sender from X's callback must expire its offer at once.
func TestRegression_TwoSchedulersCallingEachOtherFromCallbacks(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(map[bool]string{false: "own-goroutine", true: "inline"}[inline], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				x, err := New(Config{InlineCallbacks: inline})
				require.NoError(t, err)
				y, err := New(Config{InlineCallbacks: inline})
				require.NoError(t, err)

				// Y: a sender whose OnOffer blocks until released, on its
				// own goroutine, and another sender waiting behind it.
				release, entered := make(chan struct{}), make(chan struct{})
				var yFinished atomic.Bool
				var afterWithdrawal offer.Status
				var yTicket offer.Ticket
				slow := &script{onOffer: func(o offer.Offer) {
					close(entered)
					<-release
					afterWithdrawal = o.Status()
					yFinished.Store(true)
				}}
				waiting := &script{}
				yTicket, err = y.Schedule(slow, 1)
				require.NoError(t, err)
				_, err = y.Schedule(waiting, 0)
				require.NoError(t, err)
				go func() { _ = y.Connect(&hostPeer{id: "Y1"}, 1) }()
				<-entered

				// X: its callback withdraws Y's offered sender, then shuts Y
				// down, which must wait for Y's running callback.
				var withdrew bool
				var shutdownErr error
				xCallbackDone := make(chan struct{})
				_, err = x.Schedule(&script{onOffer: func(o offer.Offer) {
					withdrew = y.WithdrawSender(yTicket)
					go func() {
						synctest.Wait()
						require.False(t, yFinished.Load(), "Y's callback is still blocked")
						close(release)
					}()
					shutdownErr = y.Shutdown(context.Background())
					close(xCallbackDone)
				}}, 0)
				require.NoError(t, err)
				require.NoError(t, x.Connect(&hostPeer{id: "X1"}, 1))
				<-xCallbackDone

				require.True(t, withdrew)
				require.NoError(t, shutdownErr)
				require.True(t, yFinished.Load(), "Y.Shutdown returned after Y's running callback")
				require.Equal(t, offer.Status{}, afterWithdrawal, "the withdrawal expired the offer at once")
				require.Equal(t, 1, waiting.discards, "and after the discard Y's stop caused")
				require.Zero(t, slow.discards, "a withdrawn sender is not discarded")
				require.NoError(t, x.Shutdown(context.Background()))
			})
		})
	}
}

// D3: a withdrawal while the sender's send is in the host's hands used to
// return false ("it left by sending"), and when the send then failed the
// sender stayed queued. Now the withdrawal succeeds, and the sender is gone
// whatever the send's outcome.
func TestRegression_WithdrawDuringASendThatThenFails(t *testing.T) {
	for _, sendFails := range []bool{true, false} {
		name := map[bool]string{true: "send-fails", false: "send-succeeds"}[sendFails]
		t.Run(name, func(t *testing.T) {
			inEachMode(t, Config{}, func(w *world) {
				rec := newOutcomes()
				var ticket offer.Ticket
				var withdrew []bool
				a := &hostPeer{id: "A"}
				w.peers["A"] = a
				a.onSend = func(peer.RequestID, any) { withdrew = append(withdrew, w.s.WithdrawSender(ticket)) }
				if sendFails {
					a.fail = errRefused
				}
				var id peer.RequestID
				snd := &script{onOffer: func(o offer.Offer) { id, _ = o.Request(0, "x", rec, time.Second) }}
				ticket, err := w.s.Schedule(snd, 0)
				require.NoError(t, err)
				w.settle()
				require.Zero(t, snd.offerCount(), "no channel yet")
				require.NoError(t, w.s.Connect(a, 1))
				w.settle()
				require.Equal(t, []bool{true}, withdrew, "it was still waiting: its send had not been accepted")
				require.Zero(t, w.s.Stats().SendersWaiting)
				w.connect("B", 1)
				w.settle()
				require.Equal(t, 1, snd.offerCount(), "never offered again")
				if !sendFails {
					require.NoError(t, w.s.Deliver("A", id, "pong"))
					w.settle()
					require.Equal(t, []string{"response from A: pong"}, rec.of(id), "the request it sent is live")
				}
				require.NoError(t, w.s.Shutdown(context.Background()))
				require.Zero(t, snd.discards)
			})
		})
	}
}

// D4: a sender that sent inside OnOffer has left the queue, so it does not
// count against MaxSenders when it schedules its continuation there.
func TestRegression_ASenderThatSentDoesNotCountAgainstMaxSenders(t *testing.T) {
	inEachMode(t, Config{MaxSenders: 1}, func(w *world) {
		rec := newOutcomes()
		var waitingAfterSend int
		var continuationErr error
		next := &script{}
		snd := &script{onOffer: func(o offer.Offer) {
			_, err := o.Request(0, "x", rec, time.Second)
			require.NoError(t, err)
			waitingAfterSend = w.s.Stats().SendersWaiting
			_, continuationErr = w.s.Schedule(next, 0)
		}}
		_, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		w.connect("A", 2)
		w.settle()
		require.Zero(t, waitingAfterSend, "it left by its send")
		require.NoError(t, continuationErr)
		require.Equal(t, 1, next.offerCount(), "the continuation got the other channel")
	})
}

// E1: runtime.Goexit in a callback (t.FailNow does it) used to leave the
// drainer flag set for good. Now it is logged like a panic, and the
// scheduler goes on: the work queued behind it runs, offers continue, and
// Shutdown returns.
func TestRegression_GoexitInACallbackDoesNotWedgeTheScheduler(t *testing.T) {
	for _, where := range []string{"OnOffer", "OnResponse", "peer send"} {
		t.Run(where, func(t *testing.T) {
			logs := &recordingHandler{}
			inEachMode(t, Config{Logger: logs.logger()}, func(w *world) {
				rec := newOutcomes()
				a := w.connect("A", 2)
				var ids []peer.RequestID
				exited := false
				exits := &script{onOffer: func(o offer.Offer) {
					if exited {
						return // offered again: it kept its place, and now declines
					}
					exited = true
					if where == "OnOffer" {
						runtime.Goexit()
					}
					id, _ := o.Request(0, "x", receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) {
						if where == "OnResponse" {
							runtime.Goexit()
						}
					}}, time.Second)
					ids = append(ids, id)
				}}
				if where == "peer send" {
					a.onSend = func(peer.RequestID, any) { runtime.Goexit() }
				}
				// Each call below is made on a goroutine of its own, as
				// Goexit would end the test's goroutine with inline callbacks.
				call := func(f func()) {
					done := make(chan struct{})
					go func() { defer close(done); f() }()
					<-done
					w.settle()
				}
				call(func() { _, _ = w.s.Schedule(exits, 0) })
				if where == "OnResponse" {
					require.Len(t, ids, 1)
					call(func() { _ = w.s.Deliver("A", ids[0], "pong") })
				}
				require.Equal(t, uint64(1), w.s.Stats().PanicsHandled)

				// The scheduler is still usable.
				a.onSend = nil
				after := &script{onOffer: sendFirst(rec, time.Second, &ids)}
				call(func() { _, _ = w.s.Schedule(after, 0) })
				require.Equal(t, 1, after.offerCount())
				id := ids[len(ids)-1]
				call(func() { require.NoError(t, w.s.Deliver("A", id, "pong")) })
				require.Equal(t, []string{"response from A: pong"}, rec.of(id))
				w.checkChannels()
				if where == "peer send" {
					require.Equal(t, uint64(1), w.s.Stats().SendErrors, "a send that never returned is undone")
				}
			})
			require.Equal(t, 2, logs.count("peersched: user code called runtime.Goexit"), "logged, once per mode")
		})
	}
}

// E2: a send that is still in the host's hands when OnOffer returns, and
// then fails, used to leave its sender neither queued nor discarded. Now the
// sender is held until the send ends: if it fails, the sender has declined
// and keeps its place, parked until it asks again; if it succeeds, the
// sender has left.
func TestRegression_ASendThatOutlivesItsOfferDecidesTheExit(t *testing.T) {
	for _, sendFails := range []bool{true, false} {
		name := map[bool]string{true: "send-fails", false: "send-succeeds"}[sendFails]
		t.Run(name, func(t *testing.T) {
			inEachMode(t, Config{}, func(w *world) {
				rec := newOutcomes()
				a, inSend, finishSend := w.connectBlocking("A", sendFails)
				var sendErr error
				sendDone := make(chan struct{})
				first := true
				snd := &script{onOffer: func(o offer.Offer) {
					if !first {
						return // later offers are declined
					}
					first = false
					go func() {
						_, sendErr = o.Request(0, "x", rec, time.Second)
						close(sendDone)
					}()
					<-inSend // OnOffer returns while the send is in the host's hands
				}}
				ticket, err := w.s.Schedule(snd, 0)
				require.NoError(t, err)
				<-inSend
				w.settle()
				require.Equal(t, 1, w.s.Stats().SendersWaiting, "held: its fate depends on the send")
				require.Zero(t, w.s.Stats().SendersParked, "held is not parked")
				w.connect("B", 1)
				w.settle()
				require.Equal(t, 1, snd.offerCount(), "a held sender is not offered")

				a.onSend = nil
				close(finishSend)
				<-sendDone
				w.settle()
				if sendFails {
					require.True(t, errors.Is(sendErr, errRefused))
					require.Equal(t, 1, snd.offerCount(), "declined, so parked: B is not offered")
					require.Equal(t, 1, w.s.Stats().SendersParked)
					require.True(t, w.s.Reoffer(ticket))
					w.settle()
					require.Equal(t, 2, snd.offerCount(), "asked again, so offered again")
					require.Equal(t, 1, w.s.Stats().SendersWaiting)
					require.NoError(t, w.s.Shutdown(context.Background()))
					require.Equal(t, 1, snd.discards, "and discarded once at stop")
				} else {
					require.NoError(t, sendErr)
					require.Equal(t, 1, snd.offerCount(), "it left by its send")
					require.False(t, w.s.Reoffer(ticket), "it has left")
					require.Zero(t, w.s.Stats().SendersWaiting)
					require.NoError(t, w.s.Shutdown(context.Background()))
					require.Zero(t, snd.discards)
				}
			})
		})
	}
}

// A Stop while a held sender's send is in progress discards it only if the
// send fails: the send that succeeds is its exit.
func TestHeldSenderAtStopIsDiscardedOnlyIfItsSendFails(t *testing.T) {
	for _, sendFails := range []bool{true, false} {
		name := map[bool]string{true: "send-fails", false: "send-succeeds"}[sendFails]
		t.Run(name, func(t *testing.T) {
			inEachMode(t, Config{}, func(w *world) {
				_, inSend, finishSend := w.connectBlocking("A", sendFails)
				rec := newOutcomes()
				snd := &script{onOffer: func(o offer.Offer) {
					go func() { _, _ = o.Request(0, "x", rec, time.Second) }()
					<-inSend
				}}
				_, err := w.s.Schedule(snd, 0)
				require.NoError(t, err)
				<-inSend
				w.settle()
				shutdown := make(chan error)
				go func() { shutdown <- w.s.Shutdown(context.Background()) }()
				synctest.Wait()
				select {
				case <-shutdown:
					t.Fatal("Shutdown returned while a host send was in progress")
				default:
				}
				close(finishSend)
				require.NoError(t, <-shutdown)
				if sendFails {
					require.Equal(t, 1, snd.discards)
					require.Zero(t, rec.total())
				} else {
					require.Zero(t, snd.discards)
					require.Equal(t, 1, rec.total(), "its request was told shutdown")
				}
			})
		})
	}
}

// With callbacks on the scheduler's goroutine, a host goroutine that
// delivers a response returns at once, whatever a slow receiver is doing:
// the read loop of one peer is never held by another component's work.
func TestDeliverReturnsWhileAReceiverIsSlow(t *testing.T) {
	inBubbleAsIs(t, Config{}, func(w *world) {
		w.connect("A", 1)
		w.connect("B", 1)
		release := make(chan struct{})
		var slowCalls, fastCalls atomic.Int32
		slow := receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) { slowCalls.Add(1); <-release }}
		fast := receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) { fastCalls.Add(1) }}
		var toA, toB []peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendFirst(slow, time.Minute, &toA, "A")}, 0)
		require.NoError(t, err)
		w.settle()
		_, err = w.s.Schedule(&script{onOffer: sendFirst(fast, time.Minute, &toB, "B")}, 0)
		require.NoError(t, err)
		w.settle()
		require.Len(t, toA, 1)
		require.Len(t, toB, 1)

		require.NoError(t, w.s.Deliver("A", toA[0], "a"))
		synctest.Wait()
		require.Equal(t, int32(1), slowCalls.Load(), "the slow receiver is running")
		start := time.Now()
		require.NoError(t, w.s.Deliver("B", toB[0], "b"), "B's read loop is not held")
		require.Zero(t, time.Since(start), "no virtual time passed")
		require.Zero(t, fastCalls.Load(), "B's receiver waits its turn: callbacks are serialized")
		close(release)
		w.settle()
		require.Equal(t, int32(1), fastCalls.Load())
	})
}

// A sender queued while a pass of offers is due (an answer reopened a
// channel, and the drainer is still running the answer's receiver) does not
// ask for a pass of its own (offersDue): the pass that is due must offer it
// the channel.
func TestASenderQueuedWhileAPassIsDueIsOfferedByIt(t *testing.T) {
	inBubbleAsIs(t, Config{}, func(w *world) {
		a := w.connect("A", 1)
		release := make(chan struct{})
		var slowCalls atomic.Int32
		slow := receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) { slowCalls.Add(1); <-release }}
		var first, second []peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendFirst(slow, time.Minute, &first)}, 0)
		require.NoError(t, err)
		w.settle()
		require.Len(t, first, 1)

		require.NoError(t, w.s.Deliver("A", first[0], "a"))
		synctest.Wait()
		require.Equal(t, int32(1), slowCalls.Load(), "the drainer is running the receiver; its pass of offers is due")
		late := &script{onOffer: sendFirst(receiver.Funcs{}, time.Minute, &second)}
		_, err = w.s.Schedule(late, 0)
		require.NoError(t, err)
		require.Zero(t, late.offerCount(), "offers wait for the receiver: callbacks come first")

		close(release)
		w.settle()
		require.Equal(t, 1, late.offerCount(), "the pass that was due offered the channel")
		require.Len(t, second, 1)
		require.Len(t, a.sends(), 2)
	})
}

// A peer that connects while a pass of offers is due does not ask for a
// pass of its own either: the pass that is due must offer its channel.
func TestAPeerConnectedWhileAPassIsDueIsOfferedByIt(t *testing.T) {
	inBubbleAsIs(t, Config{}, func(w *world) {
		w.connect("A", 1)
		release := make(chan struct{})
		slow := receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) { <-release }}
		var first, second []peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendFirst(slow, time.Minute, &first)}, 0)
		require.NoError(t, err)
		w.settle()
		require.Len(t, first, 1)

		require.NoError(t, w.s.Deliver("A", first[0], "a"))
		synctest.Wait() // the drainer runs the receiver; its pass of offers is due
		wantsB := &script{onOffer: sendFirst(receiver.Funcs{}, time.Minute, &second)}
		_, err = w.s.ScheduleWith(wantsB, 0, offer.Options{Only: []peer.ID{"B"}})
		require.NoError(t, err)
		b := w.connect("B", 1)
		require.Zero(t, wantsB.offerCount())

		close(release)
		w.settle()
		require.Equal(t, 1, wantsB.offerCount(), "the pass that was due offered B's channel")
		require.Len(t, second, 1)
		require.Len(t, b.sends(), 1)
	})
}

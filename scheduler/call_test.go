package scheduler

// Tests of Call, the blocking helper: one request, its outcome or the
// context's end. Each Call runs on a goroutine of the bubble; the test
// reads its result once the bubble is idle.

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// callResult is what one Call returned.
type callResult struct {
	from     peer.ID
	response any
	err      error
}

// goCall starts s.Call on a goroutine of the bubble and returns where its
// result will be.
func goCall(ctx context.Context, s *Scheduler, message any, opts CallOptions) <-chan callResult {
	out := make(chan callResult, 1)
	go func() {
		from, response, err := s.Call(ctx, 0, message, opts)
		out <- callResult{from, response, err}
	}()
	return out
}

// returned reports the Call's result, if it has returned, once the bubble
// has settled.
func (w *world) returned(out <-chan callResult) (callResult, bool) {
	w.settle()
	synctest.Wait()
	select {
	case r := <-out:
		return r, true
	default:
		return callResult{}, false
	}
}

// mustReturn is returned, failing the test if the Call has not returned.
func (w *world) mustReturn(out <-chan callResult) callResult {
	w.t.Helper()
	r, ok := w.returned(out)
	require.True(w.t, ok, "Call has not returned")
	return r
}

func (w *world) mustWait(out <-chan callResult) {
	w.t.Helper()
	r, ok := w.returned(out)
	require.False(w.t, ok, "Call returned %+v", r)
}

func TestCallReturnsTheResponse(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 1)
		out := goCall(context.Background(), w.s, "ping", CallOptions{Timeout: time.Second})
		w.mustWait(out)
		sent := a.sends()
		require.Len(t, sent, 1)
		require.Equal(t, "ping", sent[0].message)
		require.NoError(t, w.s.Deliver("A", peer.RequestID(sent[0].requestID), "pong"))
		r := w.mustReturn(out)
		require.NoError(t, r.err)
		require.Equal(t, peer.ID("A"), r.from)
		require.Equal(t, "pong", r.response)
		st := w.s.Stats()
		require.Equal(t, uint64(1), st.Succeeded)
		require.Zero(t, st.SendersWaiting)
		require.Equal(t, 1, st.ChannelsOpen)
	})
}

// A failure is returned as an error wrapping its reason; a timeout also
// matches context.DeadlineExceeded.
func TestCallReturnsTheFailureAsAnError(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		w.connect("A", 1)
		out := goCall(context.Background(), w.s, "ping", CallOptions{Timeout: time.Second})
		w.mustWait(out)
		w.advance(time.Second - time.Nanosecond)
		w.mustWait(out)
		w.advance(time.Nanosecond)
		r := w.mustReturn(out)
		require.ErrorIs(t, r.err, receiver.Timeout)
		require.ErrorIs(t, r.err, context.DeadlineExceeded)
		require.NotErrorIs(t, r.err, ErrStopped)
		require.Equal(t, `peersched: call to "A": timeout`, r.err.Error())
		require.Equal(t, peer.ID("A"), r.from)
		require.Nil(t, r.response)

		b := w.connect("B", 1)
		b.onSend = func(requestID peer.RequestID, _ any) {
			go func() { _ = w.s.Refuse("B", requestID) }()
		}
		r = w.mustReturn(goCall(context.Background(), w.s, "ping", CallOptions{Timeout: time.Second,
			Pick: func(o offer.Offer) int { return indexOf(o, "B") }}))
		require.ErrorIs(t, r.err, receiver.Refused)
		require.NotErrorIs(t, r.err, context.DeadlineExceeded)
		require.Equal(t, peer.ID("B"), r.from)
	})
}

// Cancelled while it waits for a channel: the sender is withdrawn, and
// nothing is sent when a channel opens later.
func TestCallCancelledWhileWaitingForAChannel(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		ctx, cancel := context.WithCancel(context.Background())
		out := goCall(ctx, w.s, "ping", CallOptions{Timeout: time.Second})
		w.mustWait(out)
		require.Equal(t, 1, w.s.Stats().SendersWaiting)
		cancel()
		r := w.mustReturn(out)
		require.Same(t, context.Canceled, r.err, "ctx.Err() itself")
		require.Empty(t, r.from, "nothing was sent")
		require.Zero(t, w.s.Stats().SendersWaiting, "its sender was withdrawn")
		a := w.connect("A", 1)
		w.settle()
		require.Empty(t, a.sends(), "nothing is sent later")
		require.Equal(t, 1, w.s.Stats().ChannelsOpen)
	})
}

// Cancelled while its request is in flight: the receiver is withdrawn, and
// the channel stays closed until the response, or the deadline, comes.
func TestCallCancelledInFlight(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 2)
		ctx, cancel := context.WithCancel(context.Background())
		out := goCall(ctx, w.s, "first", CallOptions{Timeout: time.Second})
		w.mustWait(out)
		cancel()
		r := w.mustReturn(out)
		require.Same(t, context.Canceled, r.err)
		require.Equal(t, peer.ID("A"), r.from, "the request was in flight to A")
		st := w.s.Stats()
		require.Equal(t, 1, st.RequestsInFlight, "the request is still out")
		require.Equal(t, 1, st.ChannelsClosed)
		require.NoError(t, w.s.Deliver("A", peer.RequestID(a.sends()[0].requestID), "late for the caller"))
		st = w.s.Stats()
		require.Equal(t, uint64(1), st.WithdrawnEnded)
		require.Zero(t, st.Succeeded, "no receiver was called")
		require.Equal(t, 2, st.ChannelsOpen, "its response reopened the channel")

		// The same, ended by the request's deadline.
		ctx, cancel = context.WithCancel(context.Background())
		out = goCall(ctx, w.s, "second", CallOptions{Timeout: time.Second})
		w.mustWait(out)
		cancel()
		require.Same(t, context.Canceled, w.mustReturn(out).err)
		w.advance(time.Second - time.Nanosecond)
		require.Equal(t, 1, w.s.Stats().ChannelsClosed)
		w.advance(time.Nanosecond)
		st = w.s.Stats()
		require.Equal(t, 2, st.ChannelsOpen, "its deadline reopened the channel")
		require.Equal(t, uint64(2), st.WithdrawnEnded)
		require.Zero(t, st.TimedOut)
	})
}

// A context that ends while the host's Send is under way: Call waits for
// the send, and its request goes on without a receiver.
func TestCallCancelledDuringTheSend(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		ctx, cancel := context.WithCancel(context.Background())
		a := w.connect("A", 1)
		a.onSend = func(peer.RequestID, any) { cancel() }
		r := w.mustReturn(goCall(ctx, w.s, "ping", CallOptions{Timeout: time.Second}))
		require.Same(t, context.Canceled, r.err)
		require.Equal(t, peer.ID("A"), r.from, "the request went to A")
		st := w.s.Stats()
		require.Equal(t, 1, st.RequestsInFlight)
		require.Zero(t, st.SendersWaiting)
		require.NoError(t, w.s.Deliver("A", peer.RequestID(a.sends()[0].requestID), "pong"))
		require.Equal(t, uint64(1), w.s.Stats().WithdrawnEnded, "withdrawn: no receiver was called")
	})
}

// A response that comes while the host's Send is still under way, and a
// context that ends then too: the scheduler takes the response when the
// send returns, before Call could withdraw the request, so Call returns
// it (issue 24, item 1).
func TestCallCancelledDuringTheSendKeepsAnAnswerTaken(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		ctx, cancel := context.WithCancel(context.Background())
		a := w.connect("A", 1)
		sendReturning := make(chan struct{})
		a.onSend = func(id peer.RequestID, _ any) {
			defer close(sendReturning)
			require.NoError(t, w.s.Deliver("A", id, "pong")) // held until the send returns
			cancel()
			synctest.Wait() // Call sees its context end while the send is under way
		}
		out := goCall(ctx, w.s, "ping", CallOptions{Timeout: time.Second})
		<-sendReturning
		r := w.mustReturn(out)
		require.NoError(t, r.err)
		require.Equal(t, "pong", r.response)
		require.Equal(t, peer.ID("A"), r.from)
		st := w.s.Stats()
		require.Equal(t, uint64(1), st.Succeeded)
		require.Zero(t, st.WithdrawnEnded)
	})
}

// callbackBlocker is a receiver whose OnResponse holds the callback
// goroutine (or, inline, the goroutine running the callbacks) until
// release is closed.
type callbackBlocker struct{ entered, release chan struct{} }

func newCallbackBlocker() *callbackBlocker {
	return &callbackBlocker{entered: make(chan struct{}), release: make(chan struct{})}
}

func (b *callbackBlocker) OnResponse(peer.RequestID, peer.ID, any) {
	close(b.entered)
	<-b.release
}

func (b *callbackBlocker) OnFailure(peer.RequestID, peer.ID, receiver.Reason) {}

// The scheduler takes a Call's response while the callbacks are busy with
// another receiver, and the Call's context ends before its receiver is
// called: the response was accepted (Deliver returned nil, Succeeded
// counts it), so Call returns it once the callbacks get to it, and does not
// return ctx.Err() (issue 24, item 1). Had the context ended before the
// response, the receiver would have been withdrawn instead
// (TestCallCancelledInFlight).
func TestCallKeepsAResponseTakenBeforeItsContextEnded(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 2)
		blocker := newCallbackBlocker()
		var release sync.Once
		defer release.Do(func() { close(blocker.release) }) // also if the test fails first
		var ids []peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendFirst(blocker, time.Second, &ids)}, 0)
		require.NoError(t, err)
		w.settle()
		require.Len(t, ids, 1)
		ctx, cancel := context.WithCancel(context.Background())
		out := goCall(ctx, w.s, "ping", CallOptions{Timeout: time.Second})
		w.mustWait(out)
		sent := a.sends()
		require.Len(t, sent, 2)

		// The blocker's answer holds the callbacks: on the callback
		// goroutine, or inline on the goroutine of its Deliver.
		go func() { _ = w.s.Deliver("A", ids[0], "hold") }()
		<-blocker.entered
		require.NoError(t, w.s.Deliver("A", peer.RequestID(sent[1].requestID), "pong"), "the scheduler takes the answer")
		cancel()
		synctest.Wait() // not settle: the callbacks are held
		select {
		case r := <-out:
			t.Fatalf("Call returned %+v before its receiver had the answer", r)
		default:
		}

		release.Do(func() { close(blocker.release) })
		r := w.mustReturn(out)
		require.NoError(t, r.err, "the answer the scheduler took is not thrown away")
		require.Equal(t, "pong", r.response)
		require.Equal(t, peer.ID("A"), r.from)
		st := w.s.Stats()
		require.Equal(t, uint64(2), st.Succeeded)
		require.Zero(t, st.WithdrawnEnded)
	})
}

// The same race, many times over with the answer and the context's end
// on two goroutines: whichever comes first, Call returns exactly what
// happened. Either the answer (Succeeded counts it) or ctx.Err() with the
// receiver withdrawn (WithdrawnEnded counts the request when it ends).
func TestCallRaceOfAnswerAndCancelIsConsistent(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 1)
		for i := range 50 {
			ctx, cancel := context.WithCancel(context.Background())
			out := goCall(ctx, w.s, i, CallOptions{Timeout: time.Second})
			w.mustWait(out)
			sent := a.sends()
			id := peer.RequestID(sent[len(sent)-1].requestID)
			before := w.s.Stats()
			delivered := make(chan error, 1)
			go func() { delivered <- w.s.Deliver("A", id, i) }()
			go cancel()
			r := w.mustReturn(out)
			if r.err == nil {
				require.Equal(t, i, r.response)
			} else {
				require.Same(t, context.Canceled, r.err)
			}
			require.NoError(t, <-delivered)
			w.settle()
			st := w.s.Stats()
			require.Equal(t, r.err == nil, st.Succeeded == before.Succeeded+1, "round %d: %+v", i, r)
			require.Equal(t, r.err != nil, st.WithdrawnEnded == before.WithdrawnEnded+1, "round %d: %+v", i, r)
		}
	})
}

// Stop ends a waiting Call with ErrStopped, and one in flight with an
// error that matches both ErrStopped and receiver.Shutdown.
func TestCallStopped(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		w.connect("A", 1)
		inFlight := goCall(context.Background(), w.s, "first", CallOptions{Timeout: time.Second})
		w.mustWait(inFlight)
		waiting := goCall(context.Background(), w.s, "second", CallOptions{Timeout: time.Second})
		w.mustWait(waiting)
		w.s.Stop()
		r := w.mustReturn(waiting)
		require.ErrorIs(t, r.err, ErrStopped)
		require.Equal(t, "peersched: scheduler stopped", r.err.Error())
		r = w.mustReturn(inFlight)
		require.ErrorIs(t, r.err, ErrStopped)
		require.ErrorIs(t, r.err, receiver.Shutdown)
		require.Equal(t, 1, strings.Count(r.err.Error(), "peersched: "), r.err.Error())
		require.Equal(t, peer.ID("A"), r.from)

		_, _, err := w.s.Call(context.Background(), 0, "third", CallOptions{Timeout: time.Second})
		require.ErrorIs(t, err, ErrStopped)
	})
}

// A Call from inside a callback waits for itself: its own OnOffer queues
// behind the callback it holds. It ends with its context, having sent
// nothing and left nothing queued, and the callback and the scheduler go
// on. (Nothing can refuse it up front without reading goroutine stacks.)
func TestCallInsideACallbackEndsWithItsContext(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 1)
		inside := make(chan error, 1)
		rec := receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) {}}
		var ids []peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			_, _, err := w.s.Call(ctx, 0, "inner", CallOptions{Timeout: time.Second})
			inside <- err
			sendFirst(rec, time.Second, &ids)(o)
		}}, 0)
		require.NoError(t, err)
		// Waiting here lets the bubble's clock run to the context's end.
		require.ErrorIs(t, <-inside, context.DeadlineExceeded)
		w.settle()
		require.Len(t, ids, 1, "the callback's own send went ahead")
		require.Len(t, a.sends(), 1, "and it is the only one: the Call sent nothing")
		require.Zero(t, w.s.Stats().SendersWaiting, "the Call's sender was withdrawn")
	})
}

// passBubbleTime lets d of a synctest bubble's time pass: a timer there
// fires as soon as every goroutine of the bubble is blocked, so the wait is
// virtual and instant. It moves the clock that contexts' deadlines read,
// which a scheduler's mock clock does not.
func passBubbleTime(d time.Duration) { <-time.After(d) }

// Without a Timeout the request's deadline is the time its context has
// left when it is sent, not when Call began.
func TestCallTimeoutFromTheContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(Config{RankSeed: testRankSeed}) // the real clock, on the bubble's time
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		out := goCall(ctx, s, "ping", CallOptions{})
		passBubbleTime(500 * time.Millisecond) // no channel for half a second
		require.NoError(t, s.Connect(&hostPeer{id: "A"}, 1))
		settleScheduler(s)
		passBubbleTime(1500*time.Millisecond - time.Nanosecond)
		settleScheduler(s)
		require.Equal(t, 1, s.Stats().RequestsInFlight, "1.5s after its send, the request is still out")
		passBubbleTime(time.Nanosecond)
		settleScheduler(s)
		r := <-out
		require.ErrorIs(t, r.err, context.DeadlineExceeded, "the context's end or the request's, due together")
		st := s.Stats()
		require.Zero(t, st.RequestsInFlight, "the request's deadline was the context's")
		require.Equal(t, uint64(1), st.TimedOut+st.WithdrawnEnded)
		require.NoError(t, s.Shutdown(context.Background()))
	})
}

// Bad input fails at once and schedules nothing.
func TestCallBadInput(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 1)
		_, _, err := w.s.Call(context.Background(), 0, "x", CallOptions{})
		require.ErrorIs(t, err, receiver.ErrBadTimeout, "no timeout and no deadline")
		_, _, err = w.s.Call(context.Background(), 0, "x", CallOptions{Timeout: -time.Second})
		require.ErrorIs(t, err, receiver.ErrBadTimeout)
		_, _, err = w.s.Call(context.Background(), 0, "x", CallOptions{Timeout: time.Second, Sender: offer.Options{Class: "none"}})
		require.ErrorIs(t, err, limit.ErrUnknownClass)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err = w.s.Call(ctx, 0, "x", CallOptions{Timeout: time.Second})
		require.Same(t, context.Canceled, err)
		_, _, err = w.s.Call(context.Background(), 0, "x", CallOptions{Timeout: time.Second,
			Pick: func(o offer.Offer) int { return o.Len() }})
		require.ErrorIs(t, err, offer.ErrNoSuchChannel)
		st := w.s.Stats()
		require.Zero(t, st.SendersWaiting)
		require.Zero(t, st.Sent)
		require.Empty(t, w.peers["A"].sends())
	})
}

// The host's send error ends the call, its sender gone.
func TestCallHostSendError(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 1)
		a.fail = errRefused
		r := w.mustReturn(goCall(context.Background(), w.s, "x", CallOptions{Timeout: time.Second}))
		require.ErrorIs(t, r.err, errRefused)
		st := w.s.Stats()
		require.Zero(t, st.SendersWaiting)
		require.Equal(t, 1, st.ChannelsOpen)
	})
}

// Pick chooses the channel, or waits for the next offer.
func TestCallPick(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		w.connect("A", 1)
		var picks int
		out := goCall(context.Background(), w.s, "x", CallOptions{Timeout: time.Second, Pick: func(o offer.Offer) int {
			picks++
			return indexOf(o, "B") // -1 while B is not offered
		}})
		w.mustWait(out)
		require.Equal(t, 1, picks)
		require.Equal(t, 1, w.s.Stats().SendersWaiting, "it waits, keeping its place")
		b := w.connect("B", 1)
		w.mustWait(out)
		require.Equal(t, 2, picks)
		require.Len(t, b.sends(), 1)
		require.NoError(t, w.s.Deliver("B", peer.RequestID(b.sends()[0].requestID), "from B"))
		r := w.mustReturn(out)
		require.NoError(t, r.err)
		require.Equal(t, peer.ID("B"), r.from)
	})
}

// Expect: a response of another type is refused, and the call waits on.
func TestCallExpect(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		a := w.connect("A", 1)
		out := goCall(context.Background(), w.s, "x", CallOptions{Timeout: time.Second, Expect: reflect.TypeFor[int]()})
		w.mustWait(out)
		id := peer.RequestID(a.sends()[0].requestID)
		require.ErrorIs(t, w.s.Deliver("A", id, "not an int"), receiver.ErrWrongResponseType)
		w.mustWait(out)
		require.NoError(t, w.s.Deliver("A", id, 42))
		r := w.mustReturn(out)
		require.NoError(t, r.err)
		require.Equal(t, 42, r.response)
	})
}

// indexOf returns the index of the first channel of peer id in o, or -1.
func indexOf(o offer.Offer, id peer.ID) int {
	for i := range o.Len() {
		if c, _ := o.Channel(i); c.Peer == id {
			return i
		}
	}
	return -1
}

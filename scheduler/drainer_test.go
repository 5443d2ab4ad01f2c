package scheduler

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// The drainer runs the callbacks queued when it looks as one batch. A
// callback that ends the drainer's goroutine with runtime.Goexit must not
// take the rest of its batch with it: Stop queues every pending request's
// failure at once, the first receiver called exits, and the others are
// still told, in order, exactly once.
func TestGoexitInABatchLeavesTheRestOfTheBatchToRun(t *testing.T) {
	inEachMode(t, Config{}, func(w *world) {
		w.connect("A", 3)
		var order []peer.RequestID
		exited := false
		rcv := receiver.Funcs{Failure: func(id peer.RequestID, _ peer.ID, reason receiver.Reason) {
			require.Equal(t, receiver.Shutdown, reason)
			order = append(order, id)
			if !exited {
				exited = true
				runtime.Goexit()
			}
		}}
		var ids []peer.RequestID
		snd := &script{onOffer: func(o offer.Offer) {
			for i := range o.Len() {
				id, err := o.Request(i, "x", rcv, time.Second)
				require.NoError(t, err)
				ids = append(ids, id)
			}
		}}
		_, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		w.settle()
		require.Len(t, ids, 3)

		done := make(chan struct{})
		go func() { defer close(done); w.s.Stop() }() // inline, the Goexit ends this goroutine
		<-done
		w.settle()
		require.Equal(t, ids, order, "every receiver told once, in order, the one that exited first")
		require.Equal(t, uint64(1), w.s.Stats().PanicsHandled)
	})
}

// A drainer goroutine that has run out of work lingers a moment for more;
// Shutdown still returns only once it has ended (promise 10: no goroutine
// of the scheduler's is left behind). Many short bursts, each followed at
// once by a shutdown, catch one that returns while a drainer lingers.
func TestShutdownWaitsForALingeringDrainer(t *testing.T) {
	for range 200 {
		s, err := New(Config{})
		require.NoError(t, err)
		require.NoError(t, s.Connect(&hostPeer{id: "A"}, 1))
		sent := make(chan peer.RequestID, 1)
		_, err = s.Schedule(&script{onOffer: func(o offer.Offer) {
			id, err := o.Request(0, "x", receiver.Funcs{}, time.Hour)
			require.NoError(t, err)
			sent <- id
		}}, 0)
		require.NoError(t, err)
		require.NoError(t, s.Deliver("A", <-sent, "pong"))
		require.NoError(t, s.Shutdown(context.Background()))
		s.callbacksMu.Lock()
		drainers := s.drainers
		s.callbacksMu.Unlock()
		require.Zero(t, drainers, "Shutdown returned while a drainer goroutine was still running")
	}
}

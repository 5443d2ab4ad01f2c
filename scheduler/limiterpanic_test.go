package scheduler

// A host's limit.Limiter is user code the scheduler calls at three places:
// Limit when ConnectWith first reads it, and Observe then Limit when a
// request to the peer ends (answered, timed out or refused). A panic at
// any of them is recovered, logged with its stack and counted in
// Stats.PanicsHandled, in either callback mode (issue 24, item 3).

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// trapLimiter is a Limiter of a fixed limit that panics in the call named
// by panicIn: "Limit" (every read of its limit), "Observe", or "Limit
// after Observe" (the read that follows an Observe).
type trapLimiter struct {
	limit    int
	panicIn  string
	observed bool
}

func (l *trapLimiter) Limit() int {
	if l.panicIn == "Limit" || (l.panicIn == "Limit after Observe" && l.observed) {
		panic("limiter trapped in " + l.panicIn)
	}
	return l.limit
}

func (l *trapLimiter) Observe(limit.Sample) {
	l.observed = true
	if l.panicIn == "Observe" {
		panic("limiter trapped in Observe")
	}
}

// logTo returns a logger writing to a buffer, and a function that reads it.
func logTo() (*slog.Logger, func() string) {
	var buf bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&buf, &mu}, nil))
	return logger, func() string {
		mu.Lock()
		defer mu.Unlock()
		return buf.String()
	}
}

// A Limiter whose Limit panics when ConnectWith first reads it: the panic
// does not escape ConnectWith, which refuses the peer with
// ErrLimiterPanicked, changing nothing else; the panic is logged and
// counted as a Limiter's panic is; the scheduler goes on, and the same
// peer connects with a sound Limiter.
func TestPromise12_ALimiterThatPanicsAtConnectIsRefused(t *testing.T) {
	logger, logged := logTo()
	inEachMode(t, Config{Logger: logger}, func(w *world) {
		before := w.s.Stats()
		var err error
		require.NotPanics(t, func() {
			err = w.s.ConnectWith(&hostPeer{id: "A"}, peer.Options{Limiter: &trapLimiter{limit: 2, panicIn: "Limit"}})
		})
		require.ErrorIs(t, err, ErrLimiterPanicked)
		require.Equal(t, "peersched: peer's limiter panicked: Limit, read at connect, panicked: limiter trapped in Limit", err.Error())
		after := w.s.Stats()
		require.Equal(t, before.PanicsHandled+1, after.PanicsHandled)
		after.PanicsHandled = before.PanicsHandled
		require.Equal(t, before, after, "nothing else changed")
		require.Empty(t, w.s.PeerUsage(nil), "the peer is not connected")
		require.Contains(t, logged(), "limiter trapped in Limit")
		require.Contains(t, logged(), "in=limit.Limiter")

		require.NoError(t, w.s.ConnectWith(&hostPeer{id: "A"}, peer.Options{Limiter: &trapLimiter{limit: 2}}))
		require.Equal(t, 2, w.usage("A").Limit)
	})
}

// A panic in Observe, or in the Limit read after it, whichever way the
// request ended: the peer keeps its limit, its channel reopens, the
// receiver gets its outcome, and the panic is logged and counted.
func TestPromise13_ALimiterPanicAtEveryCallIsRecovered(t *testing.T) {
	for _, panicIn := range []string{"Observe", "Limit after Observe"} {
		for _, end := range []string{"answered", "timed out", "refused"} {
			t.Run(panicIn+"/"+end, func(t *testing.T) {
				logger, logged := logTo()
				inEachMode(t, Config{Logger: logger}, func(w *world) {
					require.NoError(t, w.s.ConnectWith(&hostPeer{id: "A"}, peer.Options{Limiter: &trapLimiter{limit: 2, panicIn: panicIn}}))
					rec := newOutcomes()
					var ids []peer.RequestID
					_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
					require.NoError(t, err)
					w.settle()
					require.Len(t, ids, 1)
					want := ""
					switch end {
					case "answered":
						require.NoError(t, w.s.Deliver("A", ids[0], "pong"))
						want = "response from A: pong"
					case "timed out":
						w.advance(time.Second)
						want = "failure from A: timeout"
					case "refused":
						require.NoError(t, w.s.Refuse("A", ids[0]))
						want = "failure from A: refused"
					}
					w.settle()
					require.Equal(t, []string{want}, rec.of(ids[0]))
					require.Equal(t, uint64(1), w.s.Stats().PanicsHandled)
					require.Equal(t, peer.Usage{ID: "A", Channels: 2, ChannelsOpen: 2, Limit: 2, RTT: w.usage("A").RTT}, w.usage("A"),
						"the peer keeps its limit, and its channel reopened")
					require.Contains(t, logged(), "limiter trapped in "+panicIn)
					require.Contains(t, logged(), "in=limit.Limiter")
				})
			})
		}
	}
}

//go:build lockorder

package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// A request's life on the inline path, as BenchmarkLifecycle's
// scheduler-inline times it: a response delivered, its receiver scheduling
// the sender again, the offer, the send. Each lock round trip costs about
// 9 ns uncontended on the 2-core machine (BENCHMARKS.md, issue 27's fourth
// round), and every lock word is a cache line that two goroutines pass
// between them in the default mode. This test pins how many round trips of
// each lock that life takes, so that a change adding one to every request
// says so here.
func TestLockRoundTripsPerRequest(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		const channels, steps = 4, 100
		p := w.connect("A", channels)
		snd := &oneRequestSender{}
		var sendErr error
		rcv := receiver.Funcs{Response: func(peer.RequestID, peer.ID, any) {
			if _, err := w.s.Schedule(snd, 0); err != nil && sendErr == nil {
				sendErr = err
			}
		}}
		snd.send = func(o offer.Offer) {
			if _, err := o.Request(0, "q", rcv, time.Hour); err != nil && sendErr == nil {
				sendErr = err
			}
		}
		for range channels {
			_, err := w.s.Schedule(snd, 0)
			require.NoError(t, err)
		}
		require.NoError(t, sendErr)
		require.Len(t, p.sends(), channels, "every channel busy")

		s := w.s
		locks := []countedLock{
			// answer (with the requests lock), Schedule, makeOffers,
			// the claim, the send's end, the offer's close
			{"offers", &s.offersMu, 6},
			// answer, the claim, the send's end
			{"requests", &s.requestsMu, 3},
			// answer (queues the call, runs the drainer), the drainer
			// after the batch and after the offers; Schedule takes none,
			// as the answer made a pass of offers due (offersDue)
			{"callbacks", &s.callbacksMu, 3},
		}
		if s.queueAnswers { // GOMAXPROCS at New was queueAnswersFrom or more
			locks = append(locks, countedLock{"answers", &s.answersMu, 1})
		}
		before := make([]uint64, len(locks))
		for i, l := range locks {
			before[i] = l.mu.Acquisitions()
		}
		for k := range steps {
			id := p.sends()[k].requestID // the oldest outstanding
			require.NoError(t, s.Deliver(p.id, id, "r"))
		}
		require.NoError(t, sendErr)
		require.Len(t, p.sends(), channels+steps, "each response replaced")
		for i, l := range locks {
			got := float64(l.mu.Acquisitions()-before[i]) / steps
			require.Equalf(t, float64(l.want), got, "round trips of the %s lock per request", l.name)
		}
	})
}

// countedLock is a lock of the scheduler and the round trips of it a
// request's life should take.
type countedLock struct {
	name string
	mu   interface{ Acquisitions() uint64 }
	want uint64
}

// oneRequestSender hands each offer to send and reads nothing else of it:
// script reads every channel listed, a lock round trip each.
type oneRequestSender struct{ send func(offer.Offer) }

func (snd *oneRequestSender) OnOffer(o offer.Offer) { snd.send(o) }

func (snd *oneRequestSender) OnDiscard() {}

package bench

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// slowWork is what peer B's receiver does with each response: hashing this
// many bytes takes some tens of microseconds, a receiver that verifies what
// it got. It is real work, not a sleep, so it holds whichever goroutine runs
// it.
const slowWork = 64 << 10

// BenchmarkDeliverBesideASlowReceiver measures how long a host's read loop
// is held by Deliver while another component's receiver is slow. Two read
// loops deliver responses at once, one per peer, each keeping 8 requests
// outstanding: peer A's receiver does nothing, peer B's hashes slowWork
// bytes per response. Each op is one Deliver from A's loop; the metrics are
// the worst and the 99th-percentile time one of A's Deliver calls took.
//
// With inline callbacks, whichever loop finds no callbacks running runs them
// all, so A's loop is often caught running B's slow receivers; with
// callbacks on the scheduler's goroutine, Deliver only records the response.
func BenchmarkDeliverBesideASlowReceiver(b *testing.B) {
	for _, inline := range []bool{true, false} {
		name := "callbacks=own-goroutine"
		if inline {
			name = "callbacks=inline"
		}
		b.Run(name, func(b *testing.B) { benchSlowReceiver(b, inline) })
	}
}

// twoLoops is the system of BenchmarkDeliverBesideASlowReceiver.
type twoLoops struct {
	s        *scheduler.Scheduler
	fast     *fifo
	slow     *fifo
	peers    [2]*hostPeer
	senders  [2]*loopSender
	sink     atomic.Uint64 // keeps the slow receiver's work from being optimised away
	failures atomic.Uint64
}

// loopSender sends one request per offer to its peer and is scheduled again
// by its receiver, keeping its peer's requests outstanding.
type loopSender struct {
	sys  *twoLoops
	to   peer.ID
	slow bool
}

func (l *loopSender) OnOffer(o offer.Offer) {
	for i, c := range o.All() {
		if c.Peer == l.to {
			// A send racing the Shutdown that ends the run is refused
			// with ErrStopped; anything else is a failure.
			if _, err := o.Request(i, message, l, time.Hour); err != nil && !errors.Is(err, scheduler.ErrStopped) {
				l.sys.failures.Add(1)
			}
			return
		}
	}
}

func (l *loopSender) OnDiscard() {}

func (l *loopSender) OnResponse(peer.RequestID, peer.ID, any) {
	if l.slow {
		var buf [slowWork]byte
		sum := sha256.Sum256(buf[:])
		l.sys.sink.Add(uint64(sum[0]))
	}
	if _, err := l.sys.s.Schedule(l, 0); err != nil && !errors.Is(err, scheduler.ErrStopped) {
		l.sys.failures.Add(1)
	}
}

// OnFailure counts failures other than the shutdown that ends every run.
func (l *loopSender) OnFailure(_ peer.RequestID, _ peer.ID, reason receiver.Reason) {
	if reason != receiver.Shutdown {
		l.sys.failures.Add(1)
	}
}

func newTwoLoops(inline bool) (*twoLoops, error) {
	s, err := scheduler.New(scheduler.Config{InlineCallbacks: inline, MaxOfferChannels: offerChannels})
	if err != nil {
		return nil, err
	}
	sys := &twoLoops{s: s, fast: newFIFO(64, true), slow: newFIFO(64, true)}
	sys.peers[0] = &hostPeer{id: "a-fast", index: 0, out: sys.fast}
	sys.peers[1] = &hostPeer{id: "b-slow", index: 1, out: sys.slow}
	for i, p := range sys.peers {
		sys.senders[i] = &loopSender{sys: sys, to: p.id, slow: i == 1}
		if err := s.Connect(p, 8); err != nil {
			return nil, err
		}
	}
	for range 8 {
		for _, snd := range sys.senders {
			if _, err := s.Schedule(snd, 0); err != nil {
				return nil, err
			}
		}
	}
	return sys, nil
}

// next waits for a request outstanding on f.
func next(f *fifo) outstanding {
	for {
		if o, ok := f.pop(); ok {
			return o
		}
		runtime.Gosched()
	}
}

func benchSlowReceiver(b *testing.B, inline bool) {
	sys, err := newTwoLoops(inline)
	if err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	var slowLoop sync.WaitGroup
	slowLoop.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if o, ok := sys.slow.pop(); ok {
				_ = sys.s.Deliver("b-slow", peer.RequestID(o.id), response)
			} else {
				runtime.Gosched()
			}
		}
	})
	took := make([]time.Duration, 0, b.N)
	for b.Loop() {
		o := next(sys.fast)
		start := time.Now()
		_ = sys.s.Deliver("a-fast", peer.RequestID(o.id), response)
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	close(stop)
	slowLoop.Wait()
	if err := sys.s.Shutdown(context.Background()); err != nil {
		b.Fatal(err)
	}
	if n := sys.failures.Load(); n > 0 {
		b.Fatalf("%d sends or requests failed", n)
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)-1].Nanoseconds()), "max-ns/deliver")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns/deliver")
}

// TestTwoLoopsHarnessDeliversBothPeers: the harness's loops really keep
// both peers busy, in both modes (a benchmark must not measure a stall).
func TestTwoLoopsHarnessDeliversBothPeers(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprint("inline=", inline), func(t *testing.T) {
			sys, err := newTwoLoops(inline)
			if err != nil {
				t.Fatal(err)
			}
			for range 200 {
				o := next(sys.fast)
				if err := sys.s.Deliver("a-fast", peer.RequestID(o.id), response); err != nil {
					t.Fatal(err)
				}
				o = next(sys.slow)
				if err := sys.s.Deliver("b-slow", peer.RequestID(o.id), response); err != nil {
					t.Fatal(err)
				}
			}
			if err := sys.s.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := sys.s.Stats()
			if st.Succeeded != 400 || sys.failures.Load() != 0 {
				t.Fatalf("succeeded %d, failures %d", st.Succeeded, sys.failures.Load())
			}
		})
	}
}

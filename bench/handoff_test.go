package bench

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkHandOff measures what it costs on this machine to hand work from
// one goroutine to another, the price the scheduler's default mode pays
// whenever its drainer has to be woken. Two goroutines pass a turn back and
// forth; an op is one hand-off (half a round trip):
//
//   - way=spawn: the turn goes to a goroutine started for it, which hands it
//     back by ending (sync.WaitGroup): what a drainer started per batch
//     costs.
//   - way=channel: each side sleeps on an unbuffered channel until the other
//     sends on it: a drainer that parks and is woken.
//   - way=cond: the same with a sync.Cond.
//   - way=spin: each side polls an atomic turn, yielding with
//     runtime.Gosched while it waits: a drainer that lingers for work and
//     is handed a batch with an atomic store, woken by no one.
func BenchmarkHandOff(b *testing.B) {
	b.Run("way=spawn", func(b *testing.B) {
		var wg sync.WaitGroup
		for b.Loop() {
			wg.Go(func() {})
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/handoff")
	})
	b.Run("way=channel", func(b *testing.B) {
		ping, pong := make(chan struct{}), make(chan struct{})
		go func() {
			for range ping {
				pong <- struct{}{}
			}
		}()
		for b.Loop() {
			ping <- struct{}{}
			<-pong
		}
		close(ping)
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/handoff")
	})
	b.Run("way=cond", func(b *testing.B) {
		var mu sync.Mutex
		cond := sync.NewCond(&mu)
		turn, stop := 0, false
		var done sync.WaitGroup
		done.Go(func() {
			mu.Lock()
			defer mu.Unlock()
			for {
				for turn != 1 && !stop {
					cond.Wait()
				}
				if stop {
					return
				}
				turn = 0
				cond.Signal()
			}
		})
		for b.Loop() {
			mu.Lock()
			turn = 1
			cond.Signal()
			for turn != 0 {
				cond.Wait()
			}
			mu.Unlock()
		}
		mu.Lock()
		stop = true
		cond.Signal()
		mu.Unlock()
		done.Wait()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/handoff")
	})
	b.Run("way=spin", func(b *testing.B) {
		var turn atomic.Int32 // 1: the helper's turn; 0: the benchmark's; -1: stop
		var done sync.WaitGroup
		done.Go(func() {
			for {
				switch turn.Load() {
				case 1:
					turn.Store(0)
				case -1:
					return
				default:
					runtime.Gosched()
				}
			}
		})
		for b.Loop() {
			turn.Store(1)
			for turn.Load() != 0 {
				runtime.Gosched()
			}
		}
		turn.Store(-1)
		done.Wait()
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/handoff")
	})
}

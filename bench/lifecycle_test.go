package bench

import (
	"errors"
	"fmt"
	"runtime"
	"testing"
)

// impls are the implementations the lifecycle benchmarks compare: the
// scheduler runs its callbacks on its own goroutine (the default) or inline.
var impls = []string{"floor", "naive", "scheduler", "scheduler-inline"}

// inflights are the numbers of requests kept outstanding.
var inflights = []int{100, 10_000, 1_000_000}

// lifecyclePeers is the number of peers the lifecycle benchmarks spread
// their requests over; each has inflight/lifecyclePeers channels, so at
// steady state exactly one channel is open: the one the last response
// reopened.
const lifecyclePeers = 10

// parallelInflight is the number of requests outstanding in
// BenchmarkLifecycleParallel.
const parallelInflight = 10_000

// buildSystem returns impl with its peers connected and nothing sent. If
// shared is set its FIFO takes a lock, so that several goroutines can step.
func buildSystem(impl string, inflight int, shared bool) (system, error) {
	// With callbacks on the scheduler's goroutine the host's sends come from
	// that goroutine, not the one stepping, so the FIFO needs its lock.
	out := newFIFO(inflight+1, shared || impl == "scheduler")
	perPeer := inflight / lifecyclePeers
	switch impl {
	case "floor":
		return newFloor(lifecyclePeers, out), nil
	case "naive":
		return newNaive(lifecyclePeers, perPeer, out), nil
	case "scheduler", "scheduler-inline":
		return newSchedSystem(schedOptions{peers: lifecyclePeers, channels: perPeer, resendOnResponse: true,
			inline: impl == "scheduler-inline"}, out)
	}
	return nil, fmt.Errorf("bench: no implementation %q", impl)
}

// filledSystem is a system with its requests outstanding, and the heap each
// of them cost.
type filledSystem struct {
	system
	bytesPerPending float64
}

// fillSystem builds impl and sends inflight requests, measuring the heap the
// requests added, then warms it up with one lap of steps.
//
// The lap answers and replaces every request once, untimed. With callbacks
// on the scheduler's goroutine the steps run ahead of the drainer, whose
// queues (the callbacks owed, the senders rescheduled) grow to the backlog
// once, by doubling: at a million in flight that growth took a few hundred
// milliseconds, which a node that runs for hours pays once and a timed
// round of two million steps would otherwise pay within it.
func fillSystem(impl string, inflight int, shared bool) (*filledSystem, error) {
	sys, err := buildSystem(impl, inflight, shared)
	if err != nil {
		return nil, err
	}
	var fillErr error
	perPending := bytesPer(inflight, func() { fillErr = sys.fill(inflight) })
	if fillErr == nil {
		fillErr = warmUp(sys, inflight)
	}
	if fillErr != nil {
		sys.close()
		return nil, fillErr
	}
	return &filledSystem{system: sys, bytesPerPending: perPending}, nil
}

// warmUp steps sys once for each of its inflight requests and waits for it
// to catch up.
func warmUp(sys system, inflight int) error {
	for range inflight {
		if err := stepShared(sys); err != nil {
			return err
		}
	}
	sys.caughtUp()
	return sys.err()
}

func reuseFilled(b *testing.B, key, impl string, inflight int, shared bool) *filledSystem {
	// A system is made for the processors it runs on (the scheduler reads
	// GOMAXPROCS at New), so -cpu 1,2,... builds one for each.
	key = fmt.Sprintf("%s/procs=%d", key, runtime.GOMAXPROCS(0))
	return reuse(b, key, func() (*filledSystem, func()) {
		fs, err := fillSystem(impl, inflight, shared)
		if err != nil {
			b.Fatal(err)
		}
		return fs, fs.close
	})
}

// BenchmarkLifecycle times one request's life: each op answers the oldest
// outstanding request and sends a new one, keeping inflight outstanding.
func BenchmarkLifecycle(b *testing.B) {
	for _, impl := range impls {
		for _, inflight := range inflights {
			name := fmt.Sprintf("impl=%s/inflight=%d", impl, inflight)
			b.Run(name, func(b *testing.B) {
				fs := reuseFilled(b, "Lifecycle/"+name, impl, inflight, false)
				timeSteps(b, fs)
				b.ReportMetric(fs.bytesPerPending, "B/pending")
			})
		}
	}
}

// BenchmarkLifecycleParallel is BenchmarkLifecycle with several goroutines
// answering and sending at once, parallelInflight requests outstanding.
func BenchmarkLifecycleParallel(b *testing.B) {
	for _, impl := range impls {
		name := fmt.Sprintf("impl=%s", impl)
		b.Run(name, func(b *testing.B) {
			fs := reuseFilled(b, "LifecycleParallel/"+name, impl, parallelInflight, true)
			b.ReportAllocs()
			b.SetParallelism(2)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := stepShared(fs); err != nil {
						b.Error(err)
						return
					}
				}
			})
			trailing := fs.trailing()
			fs.caughtUp() // timed: see timeSteps
			b.StopTimer()
			b.ReportMetric(float64(trailing), "trailing")
			if err := fs.err(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(fs.bytesPerPending, "B/pending")
		})
	}
}

// stepShared steps a system that other goroutines step too. Another
// goroutine may be answering the request that replaces one it answered and
// not have sent it yet (with callbacks on the scheduler's goroutine, that
// goroutine sends it); until it has, the FIFO may be empty for a moment,
// and the step waits for a request.
func stepShared(sys system) error {
	for {
		err := sys.step()
		if !errors.Is(err, errFIFOEmpty) {
			return err
		}
		sys.waitOutstanding()
	}
}

package bench

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/peersched/peersched/peer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(releasingCache{m}) }

// releasingCache runs the tests and benchmarks, then closes the cached
// system (see reuse) so goleak sees the package as it would after a clean
// shutdown.
type releasingCache struct{ m *testing.M }

func (r releasingCache) Run() int {
	code := r.m.Run()
	cache.release()
	return code
}

// Every request in these benchmarks times out after an hour, so no deadline
// fires while the lifecycle benchmarks run on the real clock.
const longTimeout = time.Hour

// message and response are preallocated so that no benchmark allocates
// to box them.
var (
	message  any = &struct{ payload [8]byte }{}
	response any = &struct{ payload [8]byte }{}
)

// outstanding is a request the host has sent and not yet seen answered.
type outstanding struct {
	id   uint64
	peer int32 // index into the system's peers
}

// fifo holds the outstanding requests oldest first, so each step answers the
// oldest one. It is a ring that grows by doubling and never shrinks; a
// benchmark sizes it before measuring so that it does not grow while timed.
// If shared is set it takes its own lock, for the parallel benchmarks; the
// serial ones leave it unset so the harness adds no lock of its own.
type fifo struct {
	shared   bool
	mu       sync.Mutex
	nonEmpty sync.Cond // on mu, signalled by push; shared FIFOs only
	buf      []outstanding
	head     int
	n        int
}

func newFIFO(capacity int, shared bool) *fifo {
	size := 16
	for size < capacity {
		size *= 2
	}
	f := &fifo{shared: shared, buf: make([]outstanding, size)}
	f.nonEmpty.L = &f.mu
	return f
}

func (f *fifo) push(o outstanding) {
	if f.shared {
		f.mu.Lock()
		defer f.mu.Unlock()
	}
	if f.n == len(f.buf) {
		grown := make([]outstanding, 2*len(f.buf))
		for i := range f.n {
			grown[i] = f.buf[(f.head+i)&(len(f.buf)-1)]
		}
		f.buf, f.head = grown, 0
	}
	f.buf[(f.head+f.n)&(len(f.buf)-1)] = o
	f.n++
	if f.shared {
		f.nonEmpty.Signal()
	}
}

// waitNonEmpty blocks until a shared FIFO holds a request. Goroutines that
// find it empty sleep here rather than spin: with runtime.Gosched, sixteen
// goroutines spinning on an empty FIFO spent 89% of the CPU in the Go
// runtime's scheduler lock, and the benchmark measured that instead of the
// system (BENCHMARKS.md, "Past two cores").
func (f *fifo) waitNonEmpty() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n == 0 {
		f.nonEmpty.Wait()
	}
}

// len returns how many requests the FIFO holds.
func (f *fifo) len() int {
	if f.shared {
		f.mu.Lock()
		defer f.mu.Unlock()
	}
	return f.n
}

func (f *fifo) pop() (outstanding, bool) {
	if f.shared {
		f.mu.Lock()
		defer f.mu.Unlock()
	}
	if f.n == 0 {
		return outstanding{}, false
	}
	o := f.buf[f.head]
	f.head = (f.head + 1) & (len(f.buf) - 1)
	f.n--
	return o, true
}

// hostPeer is the host's side of one connection: its Send records the
// request in the FIFO, as a network would carry it to the peer, or drops it
// if the FIFO is nil.
type hostPeer struct {
	id    peer.ID
	index int32
	out   *fifo
}

func (p *hostPeer) ID() peer.ID { return p.id }

func (p *hostPeer) Send(requestID peer.RequestID, _ any) error {
	if requestID != 0 && p.out != nil {
		p.out.push(outstanding{id: uint64(requestID), peer: p.index})
	}
	return nil
}

func makePeers(n int, prefix string, out *fifo) []*hostPeer {
	peers := make([]*hostPeer, n)
	for i := range peers {
		peers[i] = &hostPeer{id: peer.ID(fmt.Sprintf("%s%05d", prefix, i)), index: int32(i), out: out}
	}
	return peers
}

// timeSteps is the timed loop the stepped benchmarks share: step b.N
// times, wait for the system to catch up with the steps, then fail if it
// saw an error outside them.
//
// The wait is timed. With callbacks on the scheduler's goroutine, a step
// only delivers: the receiver's call, the offer and the replacement's send
// come later on the drainer, which may trail the steps by as many requests
// as are in flight. Stopping the timer before it caught up would leave up
// to that many requests' work untimed: at a million in flight, before the
// wait, a 1-second run left about a million of its 2.5 million requests'
// callbacks and sends to run after the timer stopped. (That is why this
// is a b.N loop: b.Loop stops the timer as soon as it returns false.)
func timeSteps(b *testing.B, sys system) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := sys.step(); err != nil {
			b.Fatal(err)
		}
	}
	trailing := sys.trailing()
	sys.caughtUp()
	b.StopTimer()
	b.ReportMetric(float64(trailing), "trailing")
	if err := sys.err(); err != nil {
		b.Fatal(err)
	}
}

// system is one implementation of a request's life, filled with requests
// outstanding and then stepped: each step answers the oldest outstanding
// request and sends one new one, so the number outstanding stays the same.
type system interface {
	// fill sends n requests, spread evenly over the peers.
	fill(n int) error
	// step answers the oldest outstanding request and sends one new one.
	// It is safe to call from several goroutines at once if the system
	// was built for parallel use.
	step() error
	// waitOutstanding blocks until a request is outstanding for step to
	// answer; for systems built for parallel use, whose step may find none
	// while another goroutine is sending one.
	waitOutstanding()
	// caughtUp blocks until every request answered by a step has been
	// replaced: the system has as many outstanding as it was filled with.
	caughtUp()
	// trailing returns how many requests answered by the steps have not
	// been replaced yet: how far the sends trail the steps. Benchmarks
	// report it as of the last step (metric "trailing"), before waiting
	// for caughtUp.
	trailing() int
	// answered returns how many requests have been answered so far.
	answered() uint64
	// outstanding returns how many requests are outstanding.
	outstanding() int
	// err returns the first error seen outside step, if any.
	err() error
	close()
}

var errFIFOEmpty = errors.New("bench: no request outstanding")

// heapBytes returns the live heap after a full collection.
func heapBytes() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// bytesPer runs grow and returns the live heap it added, divided by count.
func bytesPer(count int, grow func()) float64 {
	before := heapBytes()
	grow()
	after := heapBytes()
	if after < before {
		return 0
	}
	return float64(after-before) / float64(count)
}

// cache keeps the last system a benchmark built, so that the rounds of one
// benchmark (the testing package calls it again with a larger b.N, and
// -count repeats it) reuse one filled system instead of filling a million
// requests each time. Only one system is kept, so memory stays that of the
// largest benchmark, not of all of them.
var cache systemCache

type systemCache struct {
	key    string
	value  any
	closer func()
}

// reuse returns the value cached under key, or closes the cached one and
// builds a new one with build. The benchmark's timer is stopped while it
// builds.
func reuse[T any](b *testing.B, key string, build func() (T, func())) T {
	if cache.key == key {
		return cache.value.(T)
	}
	b.StopTimer()
	defer b.StartTimer()
	cache.release()
	v, closer := build()
	cache.key, cache.value, cache.closer = key, v, closer
	return v
}

func (c *systemCache) release() {
	if c.closer != nil {
		c.closer()
	}
	c.key, c.value, c.closer = "", nil, nil
}

package bench

import (
	"fmt"
	"testing"

	"github.com/peersched/peersched/peer"
)

// BenchmarkPipelined times a request's life in the shape a host's traffic
// has: one read loop takes every response that has arrived (as a reader
// reads a buffer holding several frames) and delivers them back to back,
// never waiting for a receiver; each receiver schedules the next request,
// and that request's send puts it back on the wire. For naive and
// scheduler-inline the receivers, and the sends they make, run on the read
// loop; with the scheduler's default mode they run on the scheduler's
// goroutine while the read loop goes on reading.
//
// BenchmarkLifecycle, where each step answers one request and then waits for
// its replacement before the next (so the two goroutines of the default mode
// hand every request back and forth), stays as the worst case.
//
// An op is one response delivered; the timer stops once every replacement
// has been sent, so work the scheduler's goroutine has not finished counts.
func BenchmarkPipelined(b *testing.B) {
	for _, impl := range pipelinedImpls {
		b.Run("impl="+impl, func(b *testing.B) {
			p := reuse(b, "Pipelined/"+impl, func() (*pipeline, func()) {
				p, err := newPipeline(impl, pipelinedInflight)
				if err != nil {
					b.Fatal(err)
				}
				return p, p.close
			})
			b.ReportAllocs()
			b.ResetTimer()
			if err := p.run(b.N); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(p.meanBatch(), "responses/read")
		})
	}
}

// pipelinedImpls are the implementations BenchmarkPipelined compares: the
// floor has no receiver that could schedule anything.
var pipelinedImpls = []string{"naive", "scheduler", "scheduler-inline"}

// pipelinedInflight is the number of requests outstanding in
// BenchmarkPipelined: ten peers of 100 channels.
const pipelinedInflight = 1000

// pipeline is a system driven by a read loop. Its host peers' sends go to
// the wire (a shared FIFO, since with callbacks on the scheduler's
// goroutine they come from that goroutine); the loop takes what the wire
// holds, all of it, and answers it.
type pipeline struct {
	system
	wire     *fifo
	inflight int
	batch    []outstanding // the loop's read buffer, reused
	reads    uint64
	answers  uint64
	deliver  func(o outstanding) error
}

func newPipeline(impl string, inflight int) (*pipeline, error) {
	sys, err := buildSystem(impl, inflight, true)
	if err != nil {
		return nil, err
	}
	p := &pipeline{system: sys, inflight: inflight, batch: make([]outstanding, 0, inflight)}
	switch s := sys.(type) {
	case *naive:
		s.resend = true // its completion callback sends the next request
		p.wire = s.out
		p.deliver = func(o outstanding) error { return s.deliver(s.peers[o.peer].id, o.id, response) }
	case *schedSystem:
		p.wire = s.out
		p.deliver = func(o outstanding) error {
			return s.s.Deliver(s.peers[o.peer].id, peer.RequestID(o.id), response)
		}
	default:
		sys.close()
		return nil, fmt.Errorf("bench: %s has no receivers to pipeline", impl)
	}
	if err := sys.fill(inflight); err != nil {
		sys.close()
		return nil, err
	}
	p.wire.waitLen(inflight)
	return p, nil
}

// run delivers n responses, in reads of whatever the wire holds, and
// returns once the requests outstanding are back to the system's number.
func (p *pipeline) run(n int) error {
	for left := n; left > 0; {
		p.batch = p.wire.takeUpTo(p.batch[:0], left)
		p.reads++
		for _, o := range p.batch {
			if err := p.deliver(o); err != nil {
				return err
			}
		}
		left -= len(p.batch)
		p.answers += uint64(len(p.batch))
	}
	p.wire.waitLen(p.inflight)
	return p.err()
}

// meanBatch returns how many responses a read took on average.
func (p *pipeline) meanBatch() float64 {
	if p.reads == 0 {
		return 0
	}
	return float64(p.answers) / float64(p.reads)
}

// takeUpTo appends to dst up to n of the requests on a shared FIFO, oldest
// first, waiting for one if there is none, and removes them.
func (f *fifo) takeUpTo(dst []outstanding, n int) []outstanding {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n == 0 {
		f.nonEmpty.Wait()
	}
	k := min(f.n, n)
	for range k {
		dst = append(dst, f.buf[f.head])
		f.head = (f.head + 1) & (len(f.buf) - 1)
	}
	f.n -= k
	return dst
}

// waitLen blocks until a shared FIFO holds n requests: every replacement
// has been sent. Each send signals the one waiter, the read loop.
func (f *fifo) waitLen(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.n < n {
		f.nonEmpty.Wait()
	}
}

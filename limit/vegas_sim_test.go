package limit

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// A closed loop in virtual time: one sender keeps a peer as busy as a
// Limiter allows, and the peer serves requests FIFO with a number of
// workers and a fixed service time, behind a network latency. It checks the
// claim of the package documentation: Vegas finds the concurrency that keeps
// the peer's workers busy while holding the queue to about Beta requests,
// whatever the peer's size, and follows a path that gets slower or faster.

type simPeer struct {
	workers int
	service time.Duration // per request, per worker
	latency time.Duration // the rest of the round trip, spent off the peer
	jitter  time.Duration // added to latency, uniform in [0, jitter], seeded

	// From the shiftAfter-th response on, latency is latency+shift.
	shiftAfter int
	shift      time.Duration
}

// capacity is requests per second.
func (p simPeer) capacity() float64 { return float64(p.workers) / p.service.Seconds() }

type simResult struct {
	throughput float64         // responses per second after the warm-up
	waits      []time.Duration // time each request waited for a worker, after the warm-up
	limits     []int           // the limit after each response
}

type arrival struct {
	at, sent, wait time.Duration
	inFlight       int
}

type arrivals []arrival

func (a arrivals) Len() int           { return len(a) }
func (a arrivals) Less(i, j int) bool { return a[i].at < a[j].at }
func (a arrivals) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *arrivals) Push(x any)        { *a = append(*a, x.(arrival)) }
func (a *arrivals) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// simulate runs n responses through l and p, ignoring the first warm for the
// result.
func simulate(l Limiter, p simPeer, n, warm int) simResult {
	rng := rand.New(rand.NewPCG(1, 2))
	free := make([]time.Duration, p.workers) // when each worker is next free
	var (
		now      time.Duration
		inFlight int
		pending  arrivals
		res      simResult
		warmAt   time.Duration
	)
	send := func() {
		for inFlight < l.Limit() {
			inFlight++
			w := 0
			for i := range free {
				if free[i] < free[w] {
					w = i
				}
			}
			start := max(now, free[w])
			free[w] = start + p.service
			latency := p.latency + time.Duration(rng.Int64N(int64(p.jitter)+1))
			if p.shiftAfter > 0 && len(res.limits) >= p.shiftAfter {
				latency += p.shift
			}
			heap.Push(&pending, arrival{at: free[w] + latency, sent: now, wait: start - now, inFlight: inFlight})
		}
	}
	send()
	for i := range n {
		a := heap.Pop(&pending).(arrival)
		now = a.at
		inFlight--
		l.Observe(Sample{Outcome: Answered, RTT: now - a.sent, InFlight: a.inFlight, Now: now})
		res.limits = append(res.limits, l.Limit())
		if i == warm {
			warmAt = now
		}
		if i > warm {
			res.waits = append(res.waits, a.wait)
		}
		send()
	}
	res.throughput = float64(n-1-warm) / (now - warmAt).Seconds()
	return res
}

func percentile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func TestVegasClosedLoop(t *testing.T) {
	for _, c := range []struct {
		name  string
		peer  simPeer
		start int
		floor time.Duration // the floor Vegas should end with
	}{
		{"one worker", simPeer{workers: 1, service: 10 * ms, latency: 40 * ms}, 4, 50 * ms},
		{"ten workers", simPeer{workers: 10, service: 10 * ms, latency: 40 * ms}, 4, 50 * ms},
		{"ten workers, starting high", simPeer{workers: 10, service: 10 * ms, latency: 40 * ms}, 400, 50 * ms},
		{"fast service, long path", simPeer{workers: 4, service: 2 * ms, latency: 100 * ms}, 4, 102 * ms},
		{"one worker, jitter", simPeer{workers: 1, service: 10 * ms, latency: 40 * ms, jitter: 5 * ms}, 4, 0},
		{"ten workers, jitter", simPeer{workers: 10, service: 10 * ms, latency: 40 * ms, jitter: 10 * ms}, 4, 0},
		{"path slows down", simPeer{workers: 10, service: 10 * ms, latency: 40 * ms, shiftAfter: 10000, shift: 40 * ms}, 4, 90 * ms},
		{"path speeds up", simPeer{workers: 10, service: 10 * ms, latency: 40 * ms, shiftAfter: 10000, shift: -30 * ms}, 4, 20 * ms},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 1000, Start: c.start}})
			res := simulate(v, c.peer, 60000, 20000)
			p50, p99 := percentile(res.waits, 0.5), percentile(res.waits, 0.99)
			ideal := c.peer.workers * int((c.peer.service+c.peer.latency)/c.peer.service)
			t.Logf("limit %d (pipe %d), floor %v, throughput %.0f/s of %.0f/s, queueing p50 %v p99 %v max %v",
				v.Limit(), ideal, v.Floor(), res.throughput, c.peer.capacity(), p50, p99, slices.Max(res.waits))
			if res.throughput < 0.95*c.peer.capacity() {
				t.Errorf("throughput %.0f/s under 95%% of the peer's %.0f/s", res.throughput, c.peer.capacity())
			}
			if p99 > 2*c.peer.service {
				t.Errorf("p99 queueing delay %v above two service times", p99)
			}
			if c.floor != 0 && v.Floor() != c.floor {
				t.Errorf("floor %v, want %v", v.Floor(), c.floor)
			}
			if c.peer.jitter != 0 && (v.Floor() < c.peer.service+c.peer.latency || v.Floor() > c.peer.service+c.peer.latency+c.peer.jitter/2) {
				t.Errorf("floor %v outside the lower half of the RTTs a request meets with no queue", v.Floor())
			}
		})
	}
}

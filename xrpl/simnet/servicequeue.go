package simnet

import (
	"fmt"
	"time"
)

// ServiceQueue is a FIFO queue in front of a fixed number of workers, kept
// as plain arithmetic on times: it never schedules anything, starts no
// goroutine and holds no timer. It is how a simulated peer with a Service
// answers late when pushed too hard, and it is exported so that transports
// simulating a peer's capacity on real time (tcpnet's test server) use the
// same arithmetic as simnet's peers.
//
// Because the queue is FIFO and each request's service time is known when it
// arrives, a request's start is fixed on arrival: the moment the
// earliest-free worker frees up (or its arrival, if a worker is idle), and
// requests start in the order they arrived. So the requests still waiting at
// any instant are exactly the admitted ones whose start is later, a suffix of
// the arrival order.
//
// Arrivals must come in non-decreasing time order (the caller's clock does
// not go back). A ServiceQueue is not safe for concurrent use; its owner's
// lock guards it. The zero value has no workers and must not be used: make
// one with NewServiceQueue.
type ServiceQueue struct {
	free    []time.Time // when each worker is next free; a min-heap
	waiting []time.Time // starts of admitted requests not started by the last arrival, in order
	limit   int         // most requests waiting; 0: unbounded
}

// NewServiceQueue returns an idle queue in front of workers workers with
// room for queueLimit waiting requests (0: unbounded). It panics if workers
// is below 1 or queueLimit is negative, which Profile.Validate rules out for
// a Service with workers.
func NewServiceQueue(workers, queueLimit int) *ServiceQueue {
	if workers < 1 || queueLimit < 0 {
		panic(fmt.Sprintf("simnet: NewServiceQueue(%d, %d): need at least one worker and a queue limit of 0 or more", workers, queueLimit))
	}
	return &ServiceQueue{free: make([]time.Time, workers), limit: queueLimit}
}

// Waiting forgets the requests that have started by now and returns how
// many are still waiting for a worker.
func (q *ServiceQueue) Waiting(now time.Time) int {
	i := 0
	for i < len(q.waiting) && !q.waiting[i].After(now) {
		i++
	}
	q.waiting = q.waiting[i:]
	return len(q.waiting)
}

// Full reports whether a request arriving at now finds no room to wait.
// Only a request that would have to wait can find the queue full: if a
// worker is free at now, nothing is waiting. Full changes nothing but
// forgetting the requests started by now.
func (q *ServiceQueue) Full(now time.Time) bool {
	return q.limit > 0 && q.Waiting(now) >= q.limit
}

// Serve admits a request arriving at now that needs d of a worker, and
// returns when its service starts and ends. It admits the request even if
// the queue is full: the caller checks Full first and decides what a full
// queue does (drop, reject).
func (q *ServiceQueue) Serve(now time.Time, d time.Duration) (start, end time.Time) {
	start = q.free[0]
	if start.Before(now) {
		start = now
	}
	end = start.Add(d)
	q.free[0] = end
	q.siftDown()
	if start.After(now) {
		q.Waiting(now)
		q.waiting = append(q.waiting, start)
	}
	return start, end
}

// siftDown restores the heap order after the earliest-free worker's time
// grew.
func (q *ServiceQueue) siftDown() {
	h := q.free
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].Before(h[small]) {
			small = l
		}
		if r < len(h) && h[r].Before(h[small]) {
			small = r
		}
		if small == i {
			return
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
}

// Reset frees every worker and empties the queue, as a disconnection or a
// crash does: the requests in it are forgotten.
func (q *ServiceQueue) Reset() {
	clear(q.free)
	q.waiting = q.waiting[:0]
}

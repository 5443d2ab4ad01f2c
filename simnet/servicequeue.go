package simnet

import "time"

// serviceQueue is a peer's FIFO queue in front of its workers, as plain
// arithmetic on times: it never schedules anything. Because the queue is
// FIFO and each request's service time is known when it arrives, a request's
// start is fixed on arrival: the moment the earliest-free worker frees up
// (or its arrival, if a worker is idle), and requests start in the order
// they arrived. So the requests still waiting at any instant are exactly the
// admitted ones whose start is later, a suffix of the arrival order.
//
// Arrivals must come in non-decreasing time order (the network's clock does
// not go back).
type serviceQueue struct {
	free    []time.Time // when each worker is next free; a min-heap
	waiting []time.Time // starts of admitted requests not started by the last arrival, in order
	limit   int         // most requests waiting; 0: unbounded
}

func newServiceQueue(workers, limit int) *serviceQueue {
	return &serviceQueue{free: make([]time.Time, workers), limit: limit}
}

// waitingAt forgets the requests that have started by now and returns how
// many are still waiting.
func (q *serviceQueue) waitingAt(now time.Time) int {
	i := 0
	for i < len(q.waiting) && !q.waiting[i].After(now) {
		i++
	}
	q.waiting = q.waiting[i:]
	return len(q.waiting)
}

// full reports whether a request arriving at now finds no room to wait.
// Only a request that would have to wait can find the queue full: if a
// worker is free at now, nothing is waiting.
func (q *serviceQueue) full(now time.Time) bool {
	return q.limit > 0 && q.waitingAt(now) >= q.limit
}

// serve admits a request arriving at now that needs d of a worker, and
// returns when its service starts and ends. The caller checks full first.
func (q *serviceQueue) serve(now time.Time, d time.Duration) (start, end time.Time) {
	start = q.free[0]
	if start.Before(now) {
		start = now
	}
	end = start.Add(d)
	q.free[0] = end
	q.siftDown()
	if start.After(now) {
		q.waitingAt(now)
		q.waiting = append(q.waiting, start)
	}
	return start, end
}

// siftDown restores the heap order after the earliest-free worker's time
// grew.
func (q *serviceQueue) siftDown() {
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

// reset frees every worker and empties the queue, as a disconnection does.
func (q *serviceQueue) reset() {
	clear(q.free)
	q.waiting = q.waiting[:0]
}

package tcpnet

import (
	"time"

	"github.com/peersched/peersched/simnet"
)

// serviceQueue is a Server's capacity (Behaviour.Service): a FIFO queue in
// front of its workers, shared by all its connections, kept as arithmetic on
// times rather than as goroutines. Each request's service time is known when
// it is read, so in a FIFO queue its start is fixed then too: when the
// earliest-free worker frees up, or at once if one is idle. Its answer is
// then simply a reply due later, written by its connection's responder like
// any delayed reply, and dropping the queue leaves no goroutine or timer
// behind. The requests waiting at any moment are the admitted ones whose
// start is still ahead, the tail of the arrival order.
//
// Arrivals must come in non-decreasing time order: the Server reads the time
// under its lock. Not safe for concurrent use; the Server's mutex guards it.
type serviceQueue struct {
	svc     simnet.Service
	free    []time.Time // when each worker is next free; a min-heap
	waiting []time.Time // starts still ahead at the last arrival, in order

	// Counters, kept across reset; they only grow.
	served, overflowed int
	delay, maxDelay    time.Duration
}

// newServiceQueue returns the queue of svc, or nil for the zero Service
// (unlimited capacity: no queue at all).
func newServiceQueue(svc simnet.Service) *serviceQueue {
	if svc.Workers == 0 {
		return nil
	}
	return &serviceQueue{svc: svc, free: make([]time.Time, svc.Workers)}
}

// waitingAt forgets the requests that have started by now and returns how
// many still wait.
func (q *serviceQueue) waitingAt(now time.Time) int {
	started := 0
	for started < len(q.waiting) && !q.waiting[started].After(now) {
		started++
	}
	q.waiting = q.waiting[started:]
	return len(q.waiting)
}

// admit reports whether a request arriving at now finds room to wait; if
// not, it counts the overflow. A request that finds a worker idle always
// has room: then nothing waits.
func (q *serviceQueue) admit(now time.Time) bool {
	if q.svc.QueueLimit > 0 && q.waitingAt(now) >= q.svc.QueueLimit {
		q.overflowed++
		return false
	}
	return true
}

// serve queues an admitted request that arrived at now asking for objects
// objects, whose answer is size bytes on the wire, counts its queueing
// delay, and returns how long after now its service ends.
func (q *serviceQueue) serve(now time.Time, objects, size int) time.Duration {
	start := q.free[0]
	if start.Before(now) {
		start = now
	}
	end := start.Add(q.svc.Time(objects, size))
	q.free[0] = end
	q.siftDown()
	if start.After(now) {
		q.waitingAt(now)
		q.waiting = append(q.waiting, start)
	}
	wait := start.Sub(now)
	q.served++
	q.delay += wait
	q.maxDelay = max(q.maxDelay, wait)
	return end.Sub(now)
}

// siftDown restores the heap order after the earliest-free worker's time
// grew.
func (q *serviceQueue) siftDown() {
	h := q.free
	for i := 0; ; {
		l, r, first := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].Before(h[first]) {
			first = l
		}
		if r < len(h) && h[r].Before(h[first]) {
			first = r
		}
		if first == i {
			return
		}
		h[i], h[first] = h[first], h[i]
		i = first
	}
}

// reset frees every worker and empties the queue, as a crash does: the
// requests in it are lost with their connections. The counters stay.
func (q *serviceQueue) reset() {
	clear(q.free)
	q.waiting = q.waiting[:0]
}

// copyStats copies the counters into st.
func (q *serviceQueue) copyStats(st *ServerStats) {
	st.Served, st.Overflowed = q.served, q.overflowed
	st.QueueDelay, st.MaxQueueDelay = q.delay, q.maxDelay
}

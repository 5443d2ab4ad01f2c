package tcpnet

import (
	"time"

	"github.com/peersched/peersched/xrpl/simnet"
)

// serviceQueue is a Server's capacity (Behaviour.Service): one FIFO queue in
// front of its workers, shared by all its connections. The queueing
// arithmetic is simnet's (simnet.ServiceQueue), so a Server and a simulated
// peer with the same Service answer at the same moments; what is tcpnet's own
// is the service time of a request read off the wire and the counters that
// ServerStats reports. A request's start is fixed when it is read, so its
// answer is simply a reply due later, written by its connection's responder
// like any delayed reply, and dropping the queue leaves no goroutine or timer
// behind.
//
// Arrivals must come in non-decreasing time order: the Server reads the time
// under its lock. Not safe for concurrent use; the Server's mutex guards it.
type serviceQueue struct {
	svc   simnet.Service
	queue *simnet.ServiceQueue

	// Counters, kept across reset; they only grow.
	served, overflowed int
	delay, maxDelay    time.Duration
}

// newServiceQueue returns the queue of svc, or nil for the zero Service
// (unlimited capacity: no queue at all). svc must be valid
// (Behaviour.validate).
func newServiceQueue(svc simnet.Service) *serviceQueue {
	if svc.Workers == 0 {
		return nil
	}
	return &serviceQueue{svc: svc, queue: simnet.NewServiceQueue(svc.Workers, svc.QueueLimit)}
}

// admit reports whether a request arriving at now finds room to wait; if
// not, it counts the overflow. A request that finds a worker idle always
// has room: then nothing waits.
func (q *serviceQueue) admit(now time.Time) bool {
	if q.queue.Full(now) {
		q.overflowed++
		return false
	}
	return true
}

// serve queues an admitted request that arrived at now asking for objects
// objects, whose answer is size bytes on the wire, counts its queueing
// delay, and returns how long after now its service ends.
func (q *serviceQueue) serve(now time.Time, objects, size int) time.Duration {
	start, end := q.queue.Serve(now, q.svc.Time(objects, size))
	wait := start.Sub(now)
	q.served++
	q.delay += wait
	q.maxDelay = max(q.maxDelay, wait)
	return end.Sub(now)
}

// reset frees every worker and empties the queue, as a crash does: the
// requests in it are lost with their connections. The counters stay.
func (q *serviceQueue) reset() {
	q.queue.Reset()
}

// copyStats copies the counters into st.
func (q *serviceQueue) copyStats(st *ServerStats) {
	st.Served, st.Overflowed = q.served, q.overflowed
	st.QueueDelay, st.MaxQueueDelay = q.delay, q.maxDelay
}

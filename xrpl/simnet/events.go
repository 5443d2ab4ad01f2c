package simnet

import "time"

// eventKind says what an event does when its time comes.
type eventKind uint8

const (
	deliverEvent    eventKind = iota + 1 // hand a response to the host
	disconnectEvent                      // take the peer down
	reconnectEvent                       // bring the peer back
	cutEvent                             // tell the host of a cut the peer made for charges
	redialEvent                          // the host dials the peer again after a cut
)

// event is one thing the network will do at a given time.
type event struct {
	at   time.Time
	seq  uint64 // order of scheduling, to break ties between equal times
	kind eventKind
	peer *Peer

	// deliverEvent only.
	epoch   uint64 // the peer's connection the response was sent on
	id      uint64 // the request ID it is delivered under
	msg     any
	refusal bool // a refusal of the request, for Config.Refuse; msg is nil

	// disconnectEvent and reconnectEvent: part of the peer's random outage
	// chain, which schedules its own next step.
	random bool
}

// eventQueue is a binary min-heap of events ordered by (at, seq): equal times
// come out in the order they were scheduled, so a run never depends on how a
// clock orders equal deadlines. The zero value is empty and ready to use.
type eventQueue struct {
	heap []event
}

func (q *eventQueue) len() int { return len(q.heap) }

func (q *eventQueue) less(i, j int) bool {
	a, b := &q.heap[i], &q.heap[j]
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	return a.seq < b.seq
}

// push adds e.
func (q *eventQueue) push(e event) {
	q.heap = append(q.heap, e)
	for i := len(q.heap) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q.heap[i], q.heap[parent] = q.heap[parent], q.heap[i]
		i = parent
	}
}

// peek returns the earliest event's time; the queue must not be empty.
func (q *eventQueue) peek() time.Time { return q.heap[0].at }

// popDue removes and returns the earliest event if it is due at now.
func (q *eventQueue) popDue(now time.Time) (event, bool) {
	if len(q.heap) == 0 || q.heap[0].at.After(now) {
		return event{}, false
	}
	e := q.heap[0]
	last := len(q.heap) - 1
	q.heap[0] = q.heap[last]
	q.heap[last] = event{} // drop references to the message and peer
	q.heap = q.heap[:last]
	for i := 0; ; {
		l, r, small := 2*i+1, 2*i+2, i
		if l < last && q.less(l, small) {
			small = l
		}
		if r < last && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q.heap[i], q.heap[small] = q.heap[small], q.heap[i]
		i = small
	}
	return e, true
}

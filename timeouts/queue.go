// Package timeouts holds the deadlines of every pending message in one
// structure that fires them in an exact, reproducible order.
//
// A Slab or Queue is plain data: it has no goroutines, reads no clock and
// takes no locks. Times are time.Duration offsets from an epoch the caller
// chooses; the caller arms a single timer for Next and, when it fires, calls
// PopDue until it reports nothing due.
//
// Deadlines fire in order of (deadline, time armed, order of arming). With a
// clock that never goes backwards that is (deadline, order of arming). The
// tie-break matters: mock clocks fire timers with equal deadlines in an
// unstable order, so the scheduler cannot rely on one timer per message to
// be deterministic. (Between deadlines that saturated at math.MaxInt64 and
// were armed at the same instant with different durations, the shorter
// duration fires first.)
//
// Design: deadlines are grouped into lanes by their duration (`after`).
// With a non-decreasing `now`, appending to a lane keeps it sorted, so
// arming and disarming are O(1) list operations. A small indexed min-heap
// over the lane heads yields the global earliest; it holds one element per
// distinct duration in use, usually one to three.
//
// Invariants of a Slab, holding between calls:
//   - Every armed node is in exactly one lane, whose list is sorted by
//     (deadline, time armed) and, among equal keys, by order of arming,
//     because a node is placed after every node that does not come after it.
//   - heap holds exactly the non-empty lanes, each with lanes[l].pos equal
//     to its index, in min-heap order of their head's key. So heap[0]'s head
//     is the global minimum.
//   - byAfter maps a duration to its lane for exactly the non-empty lanes.
//     Free lane records have head == none and sit on freeLanes.
//   - A node is armed iff lane >= 0, held iff lane != freed. Free nodes are
//     chained through next from freeNode; retired nodes (generation
//     exhausted) are freed and on no list.
//   - armed and used count the armed and held nodes.
package timeouts

import "time"

// Handle names one slot holder. No Handle is zero, so callers may use 0 to
// mean "none".
//
// The low 32 bits are the slot plus one; the high 32 bits are the slot's
// generation, which Alloc advances, so a handle kept after its slot was
// freed and handed out again is detectably stale.
type Handle uint64

// Slot returns the number of the slot h names, for Slab.At.
func (h Handle) Slot() int32 { return int32(uint32(h)) - 1 }

// none marks a missing index in the int32 links (list ends, free nodes).
const none = -1

// Queue is a set of pending deadlines, each carrying a value, for callers
// that keep nothing else per deadline. It is a Slab of the values whose
// slots are held exactly while armed.
//
// The zero value is an empty queue ready to use. A Queue is not safe for
// concurrent use; the caller serialises access with its own lock.
type Queue struct {
	s Slab[uint64]
}

// Len reports the number of armed deadlines.
func (q *Queue) Len() int { return q.s.Len() }

// Next reports the earliest armed deadline. ok is false if the queue is
// empty.
func (q *Queue) Next() (deadline time.Duration, ok bool) { return q.s.Next() }

// Add arms a deadline at now+after carrying value and returns its handle.
// See Slab.Arm for non-positive durations, saturation and clocks that go
// backwards.
func (q *Queue) Add(now, after time.Duration, value uint64) Handle {
	h, v := q.s.AllocArmed(now, after)
	*v = value
	return h
}

// Remove disarms h and returns the value it carried. ok is false, and the
// queue is unchanged, if h already fired, was already removed, or was never
// issued by this queue (including the zero Handle).
func (q *Queue) Remove(h Handle) (value uint64, ok bool) {
	i, nd := q.s.lookup(h)
	if nd == nil {
		return 0, false
	}
	q.s.free(i, nd)
	return nd.value, true
}

// PopDue removes and returns the value of the earliest entry if its
// deadline is <= now. ok is false, and the queue is unchanged, if the queue
// is empty or its earliest deadline is after now.
func (q *Queue) PopDue(now time.Duration) (value uint64, ok bool) {
	h, v, ok := q.s.PopDue(now)
	if !ok {
		return 0, false
	}
	i := h.Slot()
	q.s.free(i, q.s.node(i))
	return *v, true
}

package slab

import "time"

// Queue is a Slab of plain values whose slots are held exactly while armed:
// the shape of a deadline queue that keeps nothing else per deadline. The
// ordering tables, the model and the benchmarks drive the Slab through it.
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

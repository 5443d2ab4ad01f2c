// Package timeouts holds the deadlines of every pending message in one
// structure that fires them in an exact, reproducible order.
//
// A Queue is plain data: it has no goroutines, reads no clock and takes no
// locks. Times are time.Duration offsets from an epoch the caller chooses;
// the caller arms a single timer for Next and, when it fires, calls PopDue
// until it reports nothing due.
//
// Entries fire in (deadline, order of Add) order. The tie-break matters:
// mock clocks fire timers with equal deadlines in an unstable order, so the
// scheduler cannot rely on one timer per message to be deterministic.
package timeouts

import (
	"math"
	"time"
)

// Handle names one armed deadline. Add never returns the zero Handle, so
// callers may use 0 to mean "no deadline armed".
//
// The low 32 bits are the slab slot plus one; the high 32 bits are the
// slot's generation at the time of Add. A slot's generation changes every
// time its entry fires or is removed, which is what makes a stale handle
// detectable.
type Handle uint64

// none marks a missing index in the int32 links (list ends, free nodes).
const none = -1

// node is one slab slot. It is 40 bytes on every platform Go supports
// (8+8+8+4+4+4+4, no padding); TestNodeSize pins that, because at a
// million pending entries the slab is what the cache sees.
type node struct {
	deadline time.Duration // absolute, saturated at math.MaxInt64
	seq      uint64        // Add order; the tie-break for equal deadlines
	value    uint64
	prev     int32 // previous node in the lane; none at the head
	next     int32 // next node in the lane, or next free slot when free
	lane     int32 // owning lane; none when the slot is free or retired
	gen      uint32
}

// lane is a FIFO of the live entries that were added with one `after`.
type lane struct {
	after time.Duration
	head  int32 // none when the lane record is free
	tail  int32
	pos   int32 // index in Queue.heap while the lane is live
}

// Queue is a set of pending deadlines ordered by (deadline, Add order).
//
// The zero value is an empty queue ready to use. A Queue is not safe for
// concurrent use; the caller serialises access with its own lock. It must
// not be copied after first use (copies share the slab).
//
// Design: entries are grouped into lanes by their `after`. With a
// non-decreasing `now`, appending to a lane keeps it sorted, so Add and
// Remove are O(1) list operations. A small indexed min-heap over the lane
// heads yields the global earliest; it holds one element per distinct
// duration in use, usually one to three.
//
// Memory grows to the high-water mark of pending entries (40 bytes each)
// and is reused, never released; drop the Queue to release it.
//
// Invariants, holding between calls:
//   - Every live node is in exactly one lane, whose list is strictly
//     increasing in (deadline, seq). Within a lane seq increases from head
//     to tail among equal deadlines, because a new node is always placed
//     after every node with deadline <= its own and carries the largest
//     seq issued so far.
//   - heap holds exactly the non-empty lanes, each with lanes[l].pos equal
//     to its index, in min-heap order of their head's (deadline, seq). So
//     heap[0]'s head is the global minimum.
//   - byAfter maps a duration to its lane for exactly the non-empty lanes.
//     Free lane records have head == none and sit on freeLanes.
//   - A node is live iff lane != none. Free nodes are chained through next
//     from freeNode; retired nodes (generation exhausted) are on no list.
//   - n is the number of live nodes.
type Queue struct {
	nodes     []node
	freeNode  int32 // head of the free slot list plus one; see freeSlot
	lanes     []lane
	freeLanes []int32
	heap      []int32 // lane indices
	byAfter   map[time.Duration]int32
	seq       uint64
	n         int
}

// freeNode is stored off by one so that the zero Queue reads as "free list
// empty"; freeSlot and setFreeSlot translate.
func (q *Queue) freeSlot() int32     { return q.freeNode - 1 }
func (q *Queue) setFreeSlot(i int32) { q.freeNode = i + 1 }

// Len reports the number of armed deadlines.
func (q *Queue) Len() int { return q.n }

// Next reports the earliest armed deadline. ok is false if the queue is
// empty.
func (q *Queue) Next() (deadline time.Duration, ok bool) {
	if len(q.heap) == 0 {
		return 0, false
	}
	return q.nodes[q.lanes[q.heap[0]].head].deadline, true
}

// Add arms a deadline at now+after carrying value and returns its handle.
//
// after should be positive; the caller validates it. A non-positive after
// is treated as 1ns, so the entry is never due at the instant it was added
// and all such entries share one lane. A deadline past the largest
// representable Duration saturates at math.MaxInt64 instead of wrapping
// into the past; saturated entries still fire in Add order.
//
// now need not be monotonic. An earlier now than a previous Add with the
// same after (a clock set backwards) is handled by walking back from the
// lane's tail, so ordering is always exact; only the cost grows, by one
// step per entry of that lane with a later deadline. A clock that never
// goes backwards, such as a monotonic reading, always gets O(1).
//
// Add panics if the slab would need more than math.MaxInt32 slots (over
// 80 GB of nodes), since slots are int32.
func (q *Queue) Add(now, after time.Duration, value uint64) Handle {
	if after <= 0 {
		after = 1
	}
	deadline := now + after
	if now > math.MaxInt64-after {
		deadline = math.MaxInt64
	}

	i := q.alloc()
	q.seq++
	nd := &q.nodes[i]
	nd.deadline = deadline
	nd.seq = q.seq
	nd.value = value

	l := q.laneFor(after)
	nd.lane = l
	ln := &q.lanes[l]
	if ln.head == none {
		// Fresh lane: it enters the heap with this node as its head.
		nd.prev, nd.next = none, none
		ln.head, ln.tail = i, i
		q.heapPush(l)
	} else {
		q.insertSorted(l, i)
	}
	q.n++
	return Handle(uint64(nd.gen)<<32 | uint64(uint32(i)+1))
}

// insertSorted links node i into the non-empty lane l after the last node
// whose deadline is <= its own. Its seq is the largest issued, so that is
// exactly its (deadline, seq) position. The normal case is an append.
func (q *Queue) insertSorted(l, i int32) {
	ln := &q.lanes[l]
	d := q.nodes[i].deadline
	after := ln.tail
	for after != none && q.nodes[after].deadline > d {
		after = q.nodes[after].prev
	}
	nd := &q.nodes[i]
	nd.prev = after
	if after == none {
		// New head: the lane's key dropped, so it can only move up.
		nd.next = ln.head
		q.nodes[ln.head].prev = i
		ln.head = i
		q.siftUp(int(ln.pos))
		return
	}
	nd.next = q.nodes[after].next
	q.nodes[after].next = i
	if nd.next == none {
		ln.tail = i
	} else {
		q.nodes[nd.next].prev = i
	}
}

// Remove disarms h and returns the value it carried. ok is false, and the
// queue is unchanged, if h already fired, was already removed, or was never
// issued by this queue (including the zero Handle).
func (q *Queue) Remove(h Handle) (value uint64, ok bool) {
	slot := uint32(h)
	if slot == 0 || uint64(slot) > uint64(len(q.nodes)) {
		return 0, false
	}
	i := int32(slot - 1)
	nd := &q.nodes[i]
	if nd.lane == none || nd.gen != uint32(h>>32) {
		return 0, false
	}
	value = nd.value
	q.unlink(i)
	return value, true
}

// PopDue removes and returns the value of the earliest entry if its
// deadline is <= now. ok is false, and the queue is unchanged, if the queue
// is empty or its earliest deadline is after now.
func (q *Queue) PopDue(now time.Duration) (value uint64, ok bool) {
	if len(q.heap) == 0 {
		return 0, false
	}
	i := q.lanes[q.heap[0]].head
	if q.nodes[i].deadline > now {
		return 0, false
	}
	value = q.nodes[i].value
	q.unlink(i)
	return value, true
}

// unlink removes live node i from its lane, repairs the heap and frees the
// slot.
func (q *Queue) unlink(i int32) {
	nd := &q.nodes[i]
	l := nd.lane
	ln := &q.lanes[l]
	prev, next := nd.prev, nd.next
	if next == none {
		ln.tail = prev
	} else {
		q.nodes[next].prev = prev
	}
	switch {
	case prev != none:
		// Head unchanged, so the lane's key and the heap are unchanged.
		q.nodes[prev].next = next
	case next != none:
		// New head has a larger key: it can only move down.
		ln.head = next
		q.siftDown(int(ln.pos))
	default:
		q.heapRemove(int(ln.pos))
		delete(q.byAfter, ln.after)
		ln.head, ln.tail = none, none
		q.freeLanes = append(q.freeLanes, l)
	}
	q.release(i)
	q.n--
}

// alloc returns a free slot, growing the slab if there is none. The slot's
// gen is kept; every other field is set by the caller.
func (q *Queue) alloc() int32 {
	if i := q.freeSlot(); i != none {
		q.setFreeSlot(q.nodes[i].next)
		return i
	}
	if len(q.nodes) >= math.MaxInt32 {
		// Slots are int32 and handles store slot+1 in 32 bits.
		panic("timeouts: too many pending deadlines")
	}
	q.nodes = append(q.nodes, node{})
	return int32(len(q.nodes) - 1)
}

// release marks slot i free and bumps its generation so that every handle
// issued for it becomes stale. A slot whose generation would wrap is
// retired instead of reused: otherwise a handle 2^32 generations old would
// match again. That costs 40 bytes per 2^32 reuses of one slot.
func (q *Queue) release(i int32) {
	nd := &q.nodes[i]
	nd.lane = none
	nd.prev = none
	nd.value = 0
	if nd.gen == math.MaxUint32 {
		nd.next = none
		return
	}
	nd.gen++
	nd.next = q.freeSlot()
	q.setFreeSlot(i)
}

// scanLanes is the number of live lanes up to which laneFor scans the heap
// rather than hashing. With the usual three durations the scan took
// BenchmarkQueue from 35 to 32 ns/op. 8 is a guess, not a measurement, at
// where scanning stops beating the hash; the map is kept up to date
// regardless, so the threshold only affects speed.
const scanLanes = 8

// laneFor returns the lane for after, creating an empty one (head == none,
// not yet in the heap) if there is none.
func (q *Queue) laneFor(after time.Duration) int32 {
	// Callers use a handful of durations, so while there are few live
	// lanes a scan beats hashing: every live lane is in the heap.
	if len(q.heap) <= scanLanes {
		for _, l := range q.heap {
			if q.lanes[l].after == after {
				return l
			}
		}
	} else if l, ok := q.byAfter[after]; ok {
		return l
	}
	var l int32
	if k := len(q.freeLanes); k > 0 {
		l = q.freeLanes[k-1]
		q.freeLanes = q.freeLanes[:k-1]
	} else {
		q.lanes = append(q.lanes, lane{})
		l = int32(len(q.lanes) - 1)
	}
	q.lanes[l] = lane{after: after, head: none, tail: none, pos: none}
	if q.byAfter == nil {
		q.byAfter = make(map[time.Duration]int32)
	}
	q.byAfter[after] = l
	return l
}

// less orders lanes by their head's (deadline, seq). Both lanes must be
// non-empty.
func (q *Queue) less(a, b int32) bool {
	x, y := &q.nodes[q.lanes[a].head], &q.nodes[q.lanes[b].head]
	if x.deadline != y.deadline {
		return x.deadline < y.deadline
	}
	return x.seq < y.seq
}

func (q *Queue) heapPush(l int32) {
	q.lanes[l].pos = int32(len(q.heap))
	q.heap = append(q.heap, l)
	q.siftUp(len(q.heap) - 1)
}

// heapRemove takes the lane at heap index k out of the heap.
func (q *Queue) heapRemove(k int) {
	last := len(q.heap) - 1
	q.lanes[q.heap[k]].pos = none
	if k != last {
		q.heap[k] = q.heap[last]
		q.lanes[q.heap[k]].pos = int32(k)
	}
	q.heap = q.heap[:last]
	if k != last {
		// The moved lane may belong above or below k.
		q.siftDown(k)
		q.siftUp(k)
	}
}

func (q *Queue) siftUp(k int) {
	h := q.heap
	for k > 0 {
		p := (k - 1) / 2
		if !q.less(h[k], h[p]) {
			break
		}
		h[k], h[p] = h[p], h[k]
		q.lanes[h[k]].pos = int32(k)
		q.lanes[h[p]].pos = int32(p)
		k = p
	}
}

func (q *Queue) siftDown(k int) {
	h := q.heap
	n := len(h)
	for {
		c := 2*k + 1
		if c >= n {
			return
		}
		if c+1 < n && q.less(h[c+1], h[c]) {
			c++
		}
		if !q.less(h[c], h[k]) {
			return
		}
		h[k], h[c] = h[c], h[k]
		q.lanes[h[k]].pos = int32(k)
		q.lanes[h[c]].pos = int32(c)
		k = c
	}
}

package slab

import (
	"iter"
	"math"
	"time"
)

// Slab holds values of type V in numbered slots, each of which may be armed
// with one deadline. It is the deadline structure and the caller's record
// table at once: a caller that keeps one record per pending message stores
// the record as V, and the deadline's links live beside it in the same slot.
// One slot per message instead of a record here and a deadline node there
// saves the memory of a second slab and a cache miss per message.
//
// A slot is named by a Handle. Alloc hands out a slot; Arm, Disarm and
// PopDue set and clear its deadline, which never frees it; Free gives it
// back. Armed slots fire in the order the package documents.
//
// The zero value is an empty slab ready to use. A Slab is not safe for
// concurrent use. Pointers to values are valid until the next Alloc.
//
// Memory: the first page starts at firstPage slots and doubles, moving its
// slots, until it holds pageSize; then slots are added in whole pages of
// pageSize, which never move. So a slab of a few dozen slots (a scheduler
// with a few dozen requests out) costs a few dozen slots, and a large one
// costs the size of a slot (24 bytes plus V) per slot at its high-water
// mark, with no slack from doubling, plus at most one page not yet used. It
// is reused, never released.
type Slab[V any] struct {
	pages     [][]node[V] // each pageSize long, except a first page still doubling
	slots     int32       // slots ever handed out; the next new slot
	freeNode  int32       // head of the free slot list plus one; see freeSlot
	lanes     []lane
	freeLanes []int32
	heap      []int32 // lane indices
	byAfter   map[time.Duration]int32
	armed     int
	used      int
}

// node is one slot: 24 bytes of deadline bookkeeping, then the value.
// TestNodeHeaderSize pins the 24.
type node[V any] struct {
	at    time.Duration // when the deadline was armed; kept after it fires
	prev  int32         // previous node in the lane; none at the head
	next  int32         // next node in the lane, or next free slot when free
	lane  int32         // owning lane, or unarmed, or freed
	gen   uint32        // of the slot's current (or, while free, last) holder
	value V
}

// Sentinels of node.lane besides a lane index.
const (
	unarmed int32 = -1 // allocated, no deadline
	freed   int32 = -2 // on the free list, or retired
)

// lane is a FIFO of the armed nodes that were armed with one `after`.
type lane struct {
	after time.Duration
	head  int32 // none when the lane record is free
	tail  int32
	pos   int32 // index in Slab.heap while the lane is live
}

// freeNode is stored off by one so that the zero Slab reads as "free list
// empty"; freeSlot and setFreeSlot translate.
func (s *Slab[V]) freeSlot() int32     { return s.freeNode - 1 }
func (s *Slab[V]) setFreeSlot(i int32) { s.freeNode = i + 1 }

func makeHandle(gen uint32, slot int32) Handle {
	return Handle(uint64(gen)<<32 | uint64(uint32(slot)+1))
}

// lookup returns the node h names if it is the slot's current holder.
func (s *Slab[V]) lookup(h Handle) (int32, *node[V]) {
	slot := uint32(h)
	if slot == 0 || slot > uint32(s.slots) {
		return 0, nil
	}
	i := int32(slot - 1)
	nd := s.node(i)
	if nd.lane == freed || nd.gen != uint32(h>>32) {
		return 0, nil
	}
	return i, nd
}

// Alloc hands out a slot and returns its handle and value. The value is as
// the slot's last holder left it (zero for a new slot), so a caller can
// keep there what it needs to know about that holder; it must set every
// field it relies on. The slot is unarmed.
//
// Alloc panics if the slab would need more than math.MaxInt32 slots.
func (s *Slab[V]) Alloc() (Handle, *V) {
	i, nd := s.alloc()
	return makeHandle(nd.gen, i), &nd.value
}

// AllocArmed is Alloc followed by Arm(h, now, after).
func (s *Slab[V]) AllocArmed(now, after time.Duration) (Handle, *V) {
	i, nd := s.alloc()
	s.arm(i, nd, now, after)
	return makeHandle(nd.gen, i), &nd.value
}

func (s *Slab[V]) alloc() (int32, *node[V]) {
	i := s.freeSlot()
	var nd *node[V]
	if i != none {
		nd = s.node(i)
		s.setFreeSlot(nd.next)
	} else {
		i, nd = s.grow()
	}
	nd.gen++ // never wraps: a slot at the last generation is retired by free
	nd.lane, nd.prev, nd.next = unarmed, none, none
	s.used++
	return i, nd
}

// Free disarms h if it is armed and gives its slot back. The value is kept
// for the slot's next holder to read. It returns when h was last armed (see
// ArmedAt), which a caller timing its messages usually wants at this point.
// ok is false, and nothing changes, if h is not a current holder.
func (s *Slab[V]) Free(h Handle) (armedAt time.Duration, ok bool) {
	i, nd := s.lookup(h)
	if nd == nil {
		return 0, false
	}
	s.free(i, nd)
	return nd.at, true
}

func (s *Slab[V]) free(i int32, nd *node[V]) {
	if nd.lane >= 0 {
		s.unlink(i, nd)
	}
	nd.lane = freed
	s.used--
	if nd.gen == math.MaxUint32 {
		// Retired: reusing the slot would wrap its generation to one
		// issued 2^32 holders ago and revive that holder's handles. That
		// costs one slot per 2^32 uses of it.
		nd.next = none
		return
	}
	nd.next = s.freeSlot()
	s.setFreeSlot(i)
}

// Get returns the value of h's slot, or nil if h is not its current holder.
func (s *Slab[V]) Get(h Handle) *V {
	if _, nd := s.lookup(h); nd != nil {
		return &nd.value
	}
	return nil
}

// At returns the handle and value of the holder of slot i, which must be
// held. It lets a caller that links its values by slot number follow the
// links.
func (s *Slab[V]) At(i int32) (Handle, *V) {
	nd := s.node(i)
	return makeHandle(nd.gen, i), &nd.value
}

// Slot returns the value of the slot h names, whoever holds it now, with the
// generation of its current (or, while free, its last) holder and whether
// it is held. v is nil if h names no slot ever handed out.
func (s *Slab[V]) Slot(h Handle) (v *V, gen uint32, held bool) {
	slot := uint32(h)
	if slot == 0 || slot > uint32(s.slots) {
		return nil, 0, false
	}
	nd := s.node(int32(slot - 1))
	return &nd.value, nd.gen, nd.lane != freed
}

// All yields every held slot in slot order. The value may be changed, and
// the slot disarmed or freed, during the iteration.
func (s *Slab[V]) All() iter.Seq2[Handle, *V] {
	return func(yield func(Handle, *V) bool) {
		for i := int32(0); i < s.slots; i++ {
			if nd := s.node(i); nd.lane != freed && !yield(makeHandle(nd.gen, i), &nd.value) {
				return
			}
		}
	}
}

// Used reports the number of held slots.
func (s *Slab[V]) Used() int { return s.used }

// Len reports the number of armed deadlines.
func (s *Slab[V]) Len() int { return s.armed }

// Next reports the earliest armed deadline. ok is false if none is armed.
func (s *Slab[V]) Next() (deadline time.Duration, ok bool) {
	if len(s.heap) == 0 {
		return 0, false
	}
	l := &s.lanes[s.heap[0]]
	return deadlineOf(s.node(l.head).at, l.after), true
}

// deadlineOf is at+after, saturated at math.MaxInt64 instead of wrapping
// into the past.
func deadlineOf(at, after time.Duration) time.Duration {
	if at > math.MaxInt64-after {
		return math.MaxInt64
	}
	return at + after
}

// ArmedAt returns when h was last armed (its `now`), and false if h is not
// a current holder. It stays readable after the deadline fires or is
// disarmed. For a holder never armed, it is when the slot was last armed,
// by an earlier holder (0 for a new slot).
func (s *Slab[V]) ArmedAt(h Handle) (time.Duration, bool) {
	if _, nd := s.lookup(h); nd != nil {
		return nd.at, true
	}
	return 0, false
}

// Arm arms h's deadline at now+after, replacing any it had. It returns false
// if h is not a current holder.
//
// after should be positive; the caller validates it. A non-positive after is
// treated as 1ns, so the slot is never due at the instant it was armed. now
// need not be monotonic: an earlier now than a previous Arm with the same
// after (a clock set backwards) is placed by walking back from the lane's
// tail, one step per slot of that lane with a later deadline. A clock that
// never goes backwards always costs O(1).
func (s *Slab[V]) Arm(h Handle, now, after time.Duration) bool {
	i, nd := s.lookup(h)
	if nd == nil {
		return false
	}
	s.arm(i, nd, now, after)
	return true
}

func (s *Slab[V]) arm(i int32, nd *node[V], now, after time.Duration) {
	if nd.lane >= 0 {
		s.unlink(i, nd)
	}
	if after <= 0 {
		after = 1
	}
	nd.at = now
	l := s.laneFor(after)
	nd.lane = l
	ln := &s.lanes[l]
	if ln.head == none {
		// Fresh lane: it enters the heap with this node as its head.
		nd.prev, nd.next = none, none
		ln.head, ln.tail = i, i
		s.heapPush(l)
	} else {
		s.insertSorted(l, i, nd)
	}
	s.armed++
}

// Disarm clears h's deadline. It returns false if h is not a current holder
// or is not armed.
func (s *Slab[V]) Disarm(h Handle) bool {
	i, nd := s.lookup(h)
	if nd == nil || nd.lane < 0 {
		return false
	}
	s.unlink(i, nd)
	return true
}

// PopDue disarms the earliest armed slot if its deadline is at or before now
// and returns it; the slot stays held. ok is false, and nothing changes, if
// nothing is due.
func (s *Slab[V]) PopDue(now time.Duration) (h Handle, v *V, ok bool) {
	if len(s.heap) == 0 {
		return 0, nil, false
	}
	l := &s.lanes[s.heap[0]]
	i := l.head
	nd := s.node(i)
	if deadlineOf(nd.at, l.after) > now {
		return 0, nil, false
	}
	s.unlink(i, nd)
	return makeHandle(nd.gen, i), &nd.value, true
}

// insertSorted links node i into the non-empty lane l after the last node
// that does not come after it, so equal keys stay in Arm order. The normal
// case is an append.
//
// Within a lane, (deadline, time armed) order is time-armed order: the
// deadline is the time armed plus the lane's duration, saturated, which
// never reverses two times.
func (s *Slab[V]) insertSorted(l, i int32, nd *node[V]) {
	ln := &s.lanes[l]
	after := ln.tail
	for after != none && nd.at < s.node(after).at {
		after = s.node(after).prev
	}
	nd.prev = after
	if after == none {
		// New head: the lane's key dropped, so it can only move up.
		nd.next = ln.head
		s.node(ln.head).prev = i
		ln.head = i
		s.siftUp(int(ln.pos))
		return
	}
	pn := s.node(after)
	nd.next = pn.next
	pn.next = i
	if nd.next == none {
		ln.tail = i
	} else {
		s.node(nd.next).prev = i
	}
}

// unlink takes armed node i out of its lane and repairs the heap.
func (s *Slab[V]) unlink(i int32, nd *node[V]) {
	l := nd.lane
	ln := &s.lanes[l]
	prev, next := nd.prev, nd.next
	if next == none {
		ln.tail = prev
	} else {
		s.node(next).prev = prev
	}
	switch {
	case prev != none:
		// Head unchanged, so the lane's key and the heap are unchanged.
		s.node(prev).next = next
	case next != none:
		// New head has a later key: it can only move down.
		ln.head = next
		s.siftDown(int(ln.pos))
	default:
		s.heapRemove(int(ln.pos))
		delete(s.byAfter, ln.after)
		ln.head, ln.tail = none, none
		s.freeLanes = append(s.freeLanes, l)
	}
	nd.lane, nd.prev, nd.next = unarmed, none, none
	s.armed--
}

// scanLanes is the number of live lanes up to which laneFor scans the heap
// rather than hashing. With the usual three durations the scan took
// BenchmarkQueue from 35 to 32 ns/op. 8 is a guess, not a measurement, at
// where scanning stops beating the hash; the map is kept up to date
// regardless, so the threshold only affects speed.
const scanLanes = 8

// laneFor returns the lane for after, creating an empty one (head == none,
// not yet in the heap) if there is none.
func (s *Slab[V]) laneFor(after time.Duration) int32 {
	// Callers use a handful of durations, so while there are few live
	// lanes a scan beats hashing: every live lane is in the heap.
	if len(s.heap) <= scanLanes {
		for _, l := range s.heap {
			if s.lanes[l].after == after {
				return l
			}
		}
	} else if l, ok := s.byAfter[after]; ok {
		return l
	}
	var l int32
	if k := len(s.freeLanes); k > 0 {
		l = s.freeLanes[k-1]
		s.freeLanes = s.freeLanes[:k-1]
	} else {
		s.lanes = append(s.lanes, lane{})
		l = int32(len(s.lanes) - 1)
	}
	s.lanes[l] = lane{after: after, head: none, tail: none, pos: none}
	if s.byAfter == nil {
		s.byAfter = make(map[time.Duration]int32)
	}
	s.byAfter[after] = l
	return l
}

// less orders lanes by their head's (deadline, time armed, after). The last
// decides only between deadlines that saturated at the same instant. Both
// lanes must be non-empty.
func (s *Slab[V]) less(a, b int32) bool {
	la, lb := &s.lanes[a], &s.lanes[b]
	x, y := s.node(la.head).at, s.node(lb.head).at
	dx, dy := deadlineOf(x, la.after), deadlineOf(y, lb.after)
	switch {
	case dx != dy:
		return dx < dy
	case x != y:
		return x < y
	}
	return la.after < lb.after
}

func (s *Slab[V]) heapPush(l int32) {
	s.lanes[l].pos = int32(len(s.heap))
	s.heap = append(s.heap, l)
	s.siftUp(len(s.heap) - 1)
}

// heapRemove takes the lane at heap index k out of the heap.
func (s *Slab[V]) heapRemove(k int) {
	last := len(s.heap) - 1
	s.lanes[s.heap[k]].pos = none
	if k != last {
		s.heap[k] = s.heap[last]
		s.lanes[s.heap[k]].pos = int32(k)
	}
	s.heap = s.heap[:last]
	if k != last {
		// The moved lane may belong above or below k.
		s.siftDown(k)
		s.siftUp(k)
	}
}

// swap exchanges the lanes at heap indices i and j.
func (s *Slab[V]) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	s.lanes[h[i]].pos = int32(i)
	s.lanes[h[j]].pos = int32(j)
}

func (s *Slab[V]) siftUp(k int) {
	for k > 0 {
		p := (k - 1) / 2
		if !s.less(s.heap[k], s.heap[p]) {
			return
		}
		s.swap(k, p)
		k = p
	}
}

func (s *Slab[V]) siftDown(k int) {
	h := s.heap
	n := len(h)
	for {
		c := 2*k + 1
		if c >= n {
			return
		}
		if c+1 < n && s.less(h[c+1], h[c]) {
			c++
		}
		if !s.less(h[c], h[k]) {
			return
		}
		s.swap(k, c)
		k = c
	}
}

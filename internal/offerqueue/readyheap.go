package offerqueue

// A level's ready senders are a binary min-heap of slots ordered by their
// seq, their order of arrival: the root is the first in queue order, and a
// sender that wakes or is offered again goes back to its place among them
// in O(log N), which a list kept in order could not do.

func (q *Queue) before(a, b int32) bool { return q.nodes[a].seq < q.nodes[b].seq }

// unready takes the ready sender in slot, of level lv, out of the ready
// senders, to be set aside, held or parked: the level keeps its heap from
// now on, built from its list (already in queue order, so already a heap)
// if it had none.
func (q *Queue) unready(lv *level, slot int32) {
	q.heapify(lv)
	q.removeReady(lv, q.nodes[slot].heapAt)
	lv.notReady++
}

// heapify gives lv its ready heap if it has none: every sender of its list,
// which is in queue order and so a heap already.
func (q *Queue) heapify(lv *level) {
	if lv.heaped {
		return
	}
	lv.ready = lv.ready[:0]
	for s := lv.head; s >= 0; s = q.nodes[s].next {
		q.nodes[s].heapAt = int32(len(lv.ready))
		lv.ready = append(lv.ready, s)
	}
	lv.heaped = true
}

// readyAgain makes the sender in slot of level lv, set aside, held or
// parked, ready again; its state is the caller's to set.
func (q *Queue) readyAgain(lv *level, slot int32) {
	q.pushReady(lv, slot)
	q.readied(lv)
}

// readied counts one sender of lv less that is not ready (it became ready,
// or left); once every sender of the level is ready, the heap is dropped.
func (q *Queue) readied(lv *level) {
	lv.notReady--
	if lv.notReady == 0 {
		lv.ready, lv.heaped = lv.ready[:0], false
	}
}

// pushReady adds the sender in slot to lv's ready heap.
func (q *Queue) pushReady(lv *level, slot int32) {
	lv.ready = append(lv.ready, slot)
	q.nodes[slot].heapAt = int32(len(lv.ready) - 1)
	q.upReady(lv, len(lv.ready)-1)
}

// removeReady takes the sender at index i out of lv's ready heap.
func (q *Queue) removeReady(lv *level, i int32) {
	h := lv.ready
	last := len(h) - 1
	q.nodes[h[i]].heapAt = -1
	if int(i) != last {
		h[i] = h[last]
		q.nodes[h[i]].heapAt = i
	}
	lv.ready = h[:last]
	if int(i) < last {
		q.downReady(lv, int(i))
		q.upReady(lv, int(i))
	}
}

func (q *Queue) upReady(lv *level, i int) {
	h := lv.ready
	for i > 0 {
		parent := (i - 1) / 2
		if !q.before(h[i], h[parent]) {
			return
		}
		q.swapReady(h, i, parent)
		i = parent
	}
}

func (q *Queue) downReady(lv *level, i int) {
	h := lv.ready
	for {
		first := i
		if l := 2*i + 1; l < len(h) && q.before(h[l], h[first]) {
			first = l
		}
		if r := 2*i + 2; r < len(h) && q.before(h[r], h[first]) {
			first = r
		}
		if first == i {
			return
		}
		q.swapReady(h, i, first)
		i = first
	}
}

func (q *Queue) swapReady(h []int32, i, j int) {
	h[i], h[j] = h[j], h[i]
	q.nodes[h[i]].heapAt, q.nodes[h[j]].heapAt = int32(i), int32(j)
}

// The walk is a small heap of indices into lv.ready, ordered as the
// senders they hold: firstReady visits the ready heap in queue order with it.

func (q *Queue) pushWalk(lv *level, walk []int32, i int32) []int32 {
	walk = append(walk, i)
	for j := len(walk) - 1; j > 0; {
		parent := (j - 1) / 2
		if !q.before(lv.ready[walk[j]], lv.ready[walk[parent]]) {
			break
		}
		walk[j], walk[parent] = walk[parent], walk[j]
		j = parent
	}
	return walk
}

func (q *Queue) popWalk(lv *level, walk []int32) []int32 {
	last := len(walk) - 1
	walk[0] = walk[last]
	walk = walk[:last]
	for j := 0; ; {
		first := j
		if l := 2*j + 1; l < len(walk) && q.before(lv.ready[walk[l]], lv.ready[walk[first]]) {
			first = l
		}
		if r := 2*j + 2; r < len(walk) && q.before(lv.ready[walk[r]], lv.ready[walk[first]]) {
			first = r
		}
		if first == j {
			return walk
		}
		walk[j], walk[first] = walk[first], walk[j]
		j = first
	}
}

package offerqueue

import (
	"sort"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// Queue holds waiting senders in the order they are offered channels: higher
// priority first, and first come, first served within a priority, except
// that a priority level passed over too often takes its turn (see
// SetPassOverLimit).
//
// A waiting sender is in one of four states, and keeps its place in all of
// them. It is ready: it is offered channels when its turn comes, if its
// class has room and the open channels meet its wants (SetWants). It is set
// aside: its wants were not met when its turn came, and it is ready again
// as soon as a channel opens that may meet them (Opened). It is held: its
// offer closed with sends still in progress, until they end. Or it is
// parked: an offer ended without a send that the host accepted, so it has
// nothing to send, and it is offered nothing more until Reoffer asks for it.
//
// Only ready senders cost anything when an offer is made, so a channel
// opening costs O(log N) for N waiting senders, however many are parked,
// held or set aside, plus O(log N) for each sender set aside whose wants it
// may meet, which it makes ready. The exceptions are a sender whose class
// is full, which is passed over where it stands (each costs O(log N) per
// offer while it is full), and one set aside under Avoid or MinChannels
// alone, which is looked at again at every opening of a peer it does not
// avoid.
//
// The zero Queue is empty and ready to use. A Queue is not safe for
// concurrent use; the scheduler guards it with its offers lock. Push and
// Remove cost O(log N) (and O(log L) for L distinct priorities in use, O(L)
// when a priority comes into or goes out of use).
type Queue struct {
	nodes  []queueNode // slab; a Ticket names a slot and its generation
	free   []int32
	levels []level // one per priority in use, highest priority first
	n      int
	parked int
	// seq numbers the senders in their order of arrival; a ready heap is
	// ordered by it.
	seq uint64
	// passOverLimit is K of SetPassOverLimit; 0 means strict priorities.
	passOverLimit int

	// Senders set aside, by what may wake them: a sender with Only peers
	// under each of them, one without in asideAny. Entries are not removed
	// when their sender leaves or wakes by another way; they go stale (see
	// asideEntry) and are dropped when their list is next walked or grows.
	asideByPeer map[peer.ID][]asideEntry
	asideAny    []asideEntry

	walk  []int32 // scratch for firstReady: a heap of ready-heap indices
	unmet []int32 // scratch for firstReady: slots to set aside
	// spare keeps the ready heaps of levels that emptied, for the next new
	// level: a sender alone, queued and leaving at every request, would
	// otherwise allocate one each time.
	spare [][]int32
}

type nodeState uint8

const (
	ready nodeState = iota
	setAside
	held
	parked
)

type queueNode struct {
	sender     Sender
	priority   int
	generation uint32 // bumped when the slot is freed, so old tickets miss
	prev, next int32  // within the node's level, every state; -1 ends the list
	heapAt     int32  // index in its level's ready heap; -1 when not ready
	state      nodeState
	// again: Reoffer was called while an offer to the sender was open or
	// its sends were in progress, so the offer's end does not park it.
	again bool
	// untilOpening: WaitForOpening was called during its offer, so the
	// offer's end sets it aside until a channel opens instead of parking it.
	untilOpening bool
	class        int32 // the sender's limit.ClassID plus one; 0 for none
	bytes        int64 // the size the sender declared for each message
	cost         int64 // what the sender declared each message costs a paced peer
	seq          uint64
	wants        *wants // nil for none
	// asideMark counts the times the sender was set aside; an asideEntry
	// with another mark is stale.
	asideMark uint32
}

type level struct {
	priority   int
	head, tail int32 // every sender of the level, in order of arrival
	// ready is a min-heap of the level's ready senders by seq: its root is
	// the first of them in queue order. It is kept only while heaped: while
	// every sender of the level is ready (none set aside, held or parked,
	// the usual case when no sender has wants), the level's list is already
	// the ready senders in queue order, and the heap would cost O(log N)
	// per sender for nothing.
	ready    []int32
	heaped   bool
	notReady int32 // senders of the level set aside, held or parked
	// passedOver counts the offers made to higher levels while this one
	// waited, since it last received an offer as a starving level, up to
	// the pass-over limit.
	passedOver int
}

// Push adds s, of no class, at the back of its priority and returns its
// ticket.
func (q *Queue) Push(s Sender, priority int) Ticket { return q.push(s, priority, 0) }

// PushIn adds s, whose messages book class, at the back of its priority and
// returns its ticket.
func (q *Queue) PushIn(s Sender, priority int, class limit.ClassID) Ticket {
	return q.push(s, priority, int32(class)+1)
}

func (q *Queue) push(s Sender, priority int, class int32) Ticket {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = int32(len(q.nodes))
		q.nodes = append(q.nodes, queueNode{heapAt: -1})
	}
	node := &q.nodes[slot]
	// Field by field: a whole-struct store of a type with pointers goes
	// through typedmemmove. A free node is zero but for its generation,
	// its aside mark and heapAt, which is -1.
	node.sender, node.priority, node.prev, node.next, node.class = s, priority, -1, -1, class
	q.seq++
	node.seq = q.seq
	lv := q.levelFor(priority)
	if lv.tail < 0 {
		lv.head = slot
	} else {
		q.nodes[lv.tail].next = slot
		node.prev = lv.tail
	}
	lv.tail = slot
	if lv.heaped {
		q.pushReady(lv, slot)
	}
	q.n++
	return makeTicket(node.generation, slot)
}

// Remove takes the sender named t out of the queue. ok is false, and nothing
// changes, if t is not waiting.
func (q *Queue) Remove(t Ticket) (s Sender, ok bool) {
	slot, node := q.lookup(t)
	if node == nil {
		return nil, false
	}
	s = node.sender
	li := q.levelIndex(node.priority)
	lv := &q.levels[li]
	if node.state == ready {
		if lv.heaped {
			q.removeReady(lv, node.heapAt)
		}
	} else {
		if node.state == parked {
			q.parked--
		}
		q.readied(lv)
	}
	if node.prev >= 0 {
		q.nodes[node.prev].next = node.next
	} else {
		lv.head = node.next
	}
	if node.next >= 0 {
		q.nodes[node.next].prev = node.prev
	} else {
		lv.tail = node.prev
	}
	if lv.head < 0 {
		q.spare = append(q.spare, lv.ready[:0])
		q.levels = append(q.levels[:li], q.levels[li+1:]...)
		q.levels[len(q.levels) : len(q.levels)+1][0] = level{} // no second copy of its heap
	}
	node.sender, node.priority, node.prev, node.next, node.heapAt = nil, 0, 0, 0, -1
	node.state, node.again, node.untilOpening, node.class, node.bytes, node.cost, node.seq, node.wants = ready, false, false, 0, 0, 0, 0, nil
	node.generation++ // makes its ticket and its aside entries stale
	q.free = append(q.free, slot)
	q.n--
	return s, true
}

// Contains reports whether the sender named t is waiting.
func (q *Queue) Contains(t Ticket) bool {
	_, node := q.lookup(t)
	return node != nil
}

const (
	offerable verdict = iota
	unmet             // its wants are not met
	classFull
)

// Len returns the number of waiting senders, parked ones included.
func (q *Queue) Len() int { return q.n }

// Parked returns the number of parked senders: those an offer ended for
// without a send, waiting for Reoffer.
func (q *Queue) Parked() int { return q.parked }

// RemoveAll empties the queue, appending its senders to dst in queue order.
func (q *Queue) RemoveAll(dst []Sender) []Sender {
	for _, lv := range q.levels {
		for slot := lv.head; slot >= 0; slot = q.nodes[slot].next {
			dst = append(dst, q.nodes[slot].sender)
		}
	}
	for i := range q.nodes {
		n := &q.nodes[i]
		*n = queueNode{generation: n.generation + 1, asideMark: n.asideMark, heapAt: -1}
	}
	q.free = q.free[:0]
	for i := len(q.nodes) - 1; i >= 0; i-- {
		q.free = append(q.free, int32(i))
	}
	for _, lv := range q.levels {
		q.spare = append(q.spare, lv.ready[:0])
	}
	clear(q.levels)
	q.levels = q.levels[:0]
	q.n, q.parked = 0, 0
	clear(q.asideByPeer)
	clear(q.asideAny)
	q.asideAny = q.asideAny[:0]
	return dst
}

func makeTicket(generation uint32, slot int32) Ticket {
	return Ticket(uint64(generation)<<32 | uint64(slot+1))
}

func (q *Queue) lookup(t Ticket) (int32, *queueNode) {
	slot := int64(uint32(t)) - 1
	if slot < 0 || slot >= int64(len(q.nodes)) {
		return 0, nil
	}
	node := &q.nodes[slot]
	if node.sender == nil || node.generation != uint32(t>>32) {
		return 0, nil
	}
	return int32(slot), node
}

// levelIndex finds priority's level; levels are sorted highest first.
func (q *Queue) levelIndex(priority int) int {
	if len(q.levels) == 1 {
		// One priority in use, the common case: no search, no closure.
		if q.levels[0].priority <= priority {
			return 0
		}
		return 1
	}
	return sort.Search(len(q.levels), func(i int) bool { return q.levels[i].priority <= priority })
}

func (q *Queue) levelFor(priority int) *level {
	i := q.levelIndex(priority)
	if i == len(q.levels) || q.levels[i].priority != priority {
		q.levels = append(q.levels, level{})
		copy(q.levels[i+1:], q.levels[i:])
		q.levels[i] = level{priority: priority, head: -1, tail: -1}
		if n := len(q.spare); n > 0 {
			q.levels[i].ready, q.spare = q.spare[n-1], q.spare[:n-1]
		}
	}
	return &q.levels[i]
}

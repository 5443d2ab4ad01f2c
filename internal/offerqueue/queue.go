package offerqueue

import (
	"sort"

	"github.com/peersched/peersched/limit"
)

// Queue holds waiting senders in the order they are offered channels: higher
// priority first, and first come, first served within a priority, except
// that a priority level passed over too often takes its turn (see
// SetPassOverLimit). A sender
// that declines an offer keeps its place but is passed over until a channel
// opens that it has not been offered; a held sender (its offer closed with
// sends still in progress) keeps its place but is passed over until they end;
// a sender whose class is full keeps its place but is passed over while it
// is.
//
// The zero Queue is empty and ready to use. A Queue is not safe for
// concurrent use; the scheduler guards it with its offers lock. Push and
// Remove cost O(log L) for L distinct priorities in use; Next costs O(1) plus
// one step per sender passed over.
type Queue struct {
	nodes  []queueNode // slab; a Ticket names a slot and its generation
	free   []int32
	levels []level // one per priority in use, highest priority first
	n      int
	// passOverLimit is K of SetPassOverLimit; 0 means strict priorities.
	passOverLimit int
}

type queueNode struct {
	sender     Sender
	priority   int
	generation uint32 // bumped when the slot is freed, so old tickets miss
	prev, next int32  // within the node's level; -1 ends the list
	declined   bool
	held       bool
	class      int32  // the sender's limit.ClassID plus one; 0 for none
	bytes      int64  // the size the sender declared for each message
	declinedAt uint64 // openings count when the sender last declined
}

type level struct {
	priority   int
	head, tail int32
	// passedOver counts the offers made to higher levels while this one
	// waited, since its own last offer, up to the pass-over limit.
	passedOver int
}

// SetPassOverLimit bounds starvation. An offer made to a sender because its
// level comes first by priority passes over every level below that has
// senders waiting; once a level has been passed over k times since its last
// offer, it is starving, and the next offer goes to its first sender that
// may be offered channels, ahead of the higher levels (the highest starving
// level first). An offer to a starving level passes no one over, so
// starvation does not feed on itself. A level whose senders may not be
// offered anything yet (declined, held, class full) stays starving until one
// may. k <= 0 means strict priorities, the zero Queue's: a lower level waits
// while any higher one has a sender to offer to.
//
// The bounds, with n levels in use. A level's first sender that may be
// offered channels gets an offer within k + 2n − 1 offers: at most k pass it
// over before it starves, and each other level takes at most one offer it
// had saved up by starving earlier and, if above it, one more once both
// starve. And over a long run in which the highest level always has a
// sender to offer to, it keeps at least k/(k+n−1) of the offers: each level
// below takes at most one for every k that pass it over, which go to the
// highest level. With two levels: within k + 3 offers (k + 1 once the low
// level has had its first), and k/(k+1) of them.
func (q *Queue) SetPassOverLimit(k int) { q.passOverLimit = max(k, 0) }

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
		q.nodes = append(q.nodes, queueNode{})
	}
	node := &q.nodes[slot]
	// Field by field: a whole-struct store of a type with pointers goes
	// through typedmemmove. A free node is zero but for its generation.
	node.sender, node.priority, node.prev, node.next, node.class = s, priority, -1, -1, class
	lv := q.levelFor(priority)
	if lv.tail < 0 {
		lv.head = slot
	} else {
		q.nodes[lv.tail].next = slot
		node.prev = lv.tail
	}
	lv.tail = slot
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
		q.levels = append(q.levels[:li], q.levels[li+1:]...)
	}
	node.sender, node.priority, node.prev, node.next = nil, 0, 0, 0
	node.declined, node.held, node.declinedAt, node.class, node.bytes = false, false, 0, 0, 0
	node.generation++
	q.free = append(q.free, slot)
	q.n--
	return s, true
}

// Contains reports whether the sender named t is waiting.
func (q *Queue) Contains(t Ticket) bool {
	_, node := q.lookup(t)
	return node != nil
}

// Decline records that the sender named t declined an offer made when
// openings channels had opened so far; it is passed over until more have.
// It releases a hold.
func (q *Queue) Decline(t Ticket, openings uint64) {
	if _, node := q.lookup(t); node != nil {
		node.declined, node.held = true, false
		node.declinedAt = openings
	}
}

// Hold passes the sender named t over, keeping its place, until Decline or
// Remove is called for it.
func (q *Queue) Hold(t Ticket) {
	if _, node := q.lookup(t); node != nil {
		node.held = true
	}
}

// Next returns the sender the next offer goes to: the first sender of the
// highest starving level (see SetPassOverLimit) that may be offered
// channels, or else the first in queue order that may. A sender may be
// offered channels if it is not held, has not declined an offer since the
// openings count last changed and, if it has a class, its class pass admits
// (every sender's class must be one of pass's; pass may be nil when no
// sender has a class). One call is one pass in the sense of limit.Pass: a
// class found full is not checked again for the senders behind it, at that
// priority or lower ones; the caller resets pass between calls. Next changes
// nothing but pass; the caller calls Offered once it makes the offer.
func (q *Queue) Next(openings uint64, pass *limit.Pass) (Ticket, Sender, bool) {
	chosen := int32(-1)
	for i := range q.levels {
		lv := &q.levels[i]
		starving := q.passOverLimit > 0 && lv.passedOver >= q.passOverLimit
		if chosen >= 0 && !starving {
			continue // only a starving level can come before the one found
		}
		slot := q.firstOffered(lv.head, openings, pass)
		if slot < 0 {
			continue
		}
		chosen = slot
		if starving || q.passOverLimit == 0 {
			break // with strict priorities, nothing below can come first
		}
	}
	if chosen < 0 {
		return 0, nil, false
	}
	node := &q.nodes[chosen]
	return makeTicket(node.generation, chosen), node.sender, true
}

// firstOffered returns the first slot from slot on in its level whose sender
// may be offered channels, or -1.
func (q *Queue) firstOffered(slot int32, openings uint64, pass *limit.Pass) int32 {
	for ; slot >= 0; slot = q.nodes[slot].next {
		node := &q.nodes[slot]
		if !node.held && (!node.declined || node.declinedAt < openings) &&
			(node.class == 0 || admits(pass, node.class)) {
			return slot
		}
	}
	return -1
}

// Offered records that an offer went to the sender named t, as Next chose.
// If its level was starving, the level's pass-over count starts again from
// zero; otherwise every level below it is passed over once more. It does
// nothing if t is not waiting or the queue has strict priorities.
func (q *Queue) Offered(t Ticket) {
	_, node := q.lookup(t)
	if node == nil || q.passOverLimit == 0 {
		return
	}
	i := q.levelIndex(node.priority)
	if q.levels[i].passedOver >= q.passOverLimit {
		q.levels[i].passedOver = 0
		return
	}
	for j := i + 1; j < len(q.levels); j++ {
		if lv := &q.levels[j]; lv.passedOver < q.passOverLimit {
			lv.passedOver++
		}
	}
}

func admits(pass *limit.Pass, class int32) bool {
	ok, err := pass.Admits(limit.ClassID(class - 1))
	return ok && err == nil
}

// Class returns the class of the sender named t; ok is false if t is not
// waiting or its sender has no class.
func (q *Queue) Class(t Ticket) (class limit.ClassID, ok bool) {
	_, node := q.lookup(t)
	if node == nil || node.class == 0 {
		return 0, false
	}
	return limit.ClassID(node.class - 1), true
}

// SetBytes records the size the sender named t declared for each of its
// messages (offer.Options.Bytes); it does nothing if t is not waiting.
func (q *Queue) SetBytes(t Ticket, bytes int64) {
	if _, node := q.lookup(t); node != nil {
		node.bytes = bytes
	}
}

// Bytes returns the size the sender named t declared for each of its
// messages: 0 if it declared none or is not waiting.
func (q *Queue) Bytes(t Ticket) int64 {
	if _, node := q.lookup(t); node != nil {
		return node.bytes
	}
	return 0
}

// Len returns the number of waiting senders.
func (q *Queue) Len() int { return q.n }

// RemoveAll empties the queue, appending its senders to dst in queue order.
func (q *Queue) RemoveAll(dst []Sender) []Sender {
	for _, lv := range q.levels {
		for slot := lv.head; slot >= 0; slot = q.nodes[slot].next {
			dst = append(dst, q.nodes[slot].sender)
		}
	}
	for i := range q.nodes {
		q.nodes[i] = queueNode{generation: q.nodes[i].generation + 1}
	}
	q.free = q.free[:0]
	for i := len(q.nodes) - 1; i >= 0; i-- {
		q.free = append(q.free, int32(i))
	}
	q.levels = q.levels[:0]
	q.n = 0
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
	}
	return &q.levels[i]
}

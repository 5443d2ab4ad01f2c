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
// Remove cost O(log N) (and O(log L) for L distinct priorities in use).
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
	seq          uint64
	wants        *wants // nil for none
	// asideMark counts the times the sender was set aside; an asideEntry
	// with another mark is stale.
	asideMark uint32
}

// wants are a sender's terms for the channels it is offered (see Options).
type wants struct {
	only  []peer.ID // deduplicated, without the avoided peers; empty for any
	avoid []peer.ID // deduplicated
	need  int       // channels that must be open and wanted: at least 1
}

// asideEntry names a sender set aside: it is live while the slot holds the
// same generation, set aside with the same mark.
type asideEntry struct {
	slot       int32
	generation uint32
	mark       uint32
}

type level struct {
	priority   int
	head, tail int32 // every sender of the level, in order of arrival
	// ready is a min-heap of the level's ready senders by seq: its root is
	// the first of them in queue order.
	ready []int32
	// passedOver counts the offers made to higher levels while this one
	// waited, since its own last offer, up to the pass-over limit.
	passedOver int
}

// Channels is what the queue needs to know of the open channels to match
// senders' wants: how many are open, in all and per peer. A peerpool.Pool is
// Channels.
type Channels interface {
	Open() int
	OpenOf(id peer.ID) int
}

// SetPassOverLimit bounds starvation. An offer made to a sender because its
// level comes first by priority passes over every level below that has
// senders waiting; once a level has been passed over k times since its last
// offer, it is starving, and the next offer goes to its first sender that
// may be offered channels, ahead of the higher levels (the highest starving
// level first). An offer to a starving level passes no one over, so
// starvation does not feed on itself. A level whose senders may not be
// offered anything yet (parked, held, set aside, class full) stays starving
// until one may. k <= 0 means strict priorities, the zero Queue's: a lower
// level waits while any higher one has a sender to offer to.
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
	q.pushReady(lv, slot)
	q.n++
	return makeTicket(node.generation, slot)
}

// SetWants records the wants of the sender named t (see Options): it is
// offered channels only when at least minChannels (at least one) channels
// are open to peers in only (any peer if only is empty) that are not in
// avoid, and then only those. The slices are copied. It does nothing if t
// is not waiting. A sender whose wants no peer could meet (every peer in
// only avoided) is the caller's to refuse: it would wait for ever.
func (q *Queue) SetWants(t Ticket, only, avoid []peer.ID, minChannels int) {
	_, node := q.lookup(t)
	if node == nil || (len(only) == 0 && len(avoid) == 0 && minChannels <= 1) {
		return
	}
	w := &wants{need: max(minChannels, 1)}
	for _, id := range avoid {
		if !contains(w.avoid, id) {
			w.avoid = append(w.avoid, id)
		}
	}
	for _, id := range only {
		if !contains(w.only, id) && !contains(w.avoid, id) {
			w.only = append(w.only, id)
		}
	}
	node.wants = w
}

// Wants returns the peers the sender named t wants channels of (nil: any)
// and those it avoids, as SetWants recorded them; the caller must not
// change them.
func (q *Queue) Wants(t Ticket) (only, avoid []peer.ID) {
	if _, node := q.lookup(t); node != nil && node.wants != nil {
		return node.wants.only, node.wants.avoid
	}
	return nil, nil
}

func contains(ids []peer.ID, id peer.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// met reports whether the open channels meet w.
func (w *wants) met(open Channels) bool {
	n := 0
	if len(w.only) > 0 {
		for _, id := range w.only {
			n += open.OpenOf(id)
		}
	} else {
		n = open.Open()
		for _, id := range w.avoid {
			n -= open.OpenOf(id)
		}
	}
	return n >= w.need
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
	switch node.state {
	case ready:
		q.removeReady(lv, node.heapAt)
	case parked:
		q.parked--
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
	node.state, node.again, node.untilOpening, node.class, node.bytes, node.seq, node.wants = ready, false, false, 0, 0, 0, nil
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

// Decline records that an offer to the sender named t ended without a send
// that the host accepted. It is parked, keeping its place, unless Reoffer
// asked for another offer while that one was open (or its sends in
// progress): then it is ready. It releases a hold.
func (q *Queue) Decline(t Ticket) {
	slot, node := q.lookup(t)
	if node == nil {
		return
	}
	lv := &q.levels[q.levelIndex(node.priority)]
	switch node.state {
	case ready:
		q.removeReady(lv, node.heapAt)
	case parked:
		return
	}
	switch {
	case node.again:
		node.again, node.untilOpening = false, false
		node.state = ready
		q.pushReady(lv, slot)
	case node.untilOpening:
		node.untilOpening = false
		q.asideUntilOpening(slot)
	default:
		node.state = parked
		q.parked++
	}
}

// WaitForOpening makes the end of the open offer to the sender named t, if
// it sends nothing, set the sender aside until a channel opens (of a peer
// it does not avoid), instead of parking it: the old way of declining, for
// a sender that cannot say what it wants in advance. It costs O(1) per
// opening for each sender waiting so, which is why it is not the default.
func (q *Queue) WaitForOpening(t Ticket) {
	if _, node := q.lookup(t); node != nil {
		node.untilOpening = true
	}
}

// asideUntilOpening sets the sender in slot, not ready, aside until the
// next opening of a peer it does not avoid.
func (q *Queue) asideUntilOpening(slot int32) {
	node := &q.nodes[slot]
	node.state = setAside
	node.asideMark++
	q.asideAny = q.appendAside(q.asideAny, asideEntry{slot: slot, generation: node.generation, mark: node.asideMark})
}

// Hold passes the sender named t over, keeping its place, until Decline or
// Remove is called for it.
func (q *Queue) Hold(t Ticket) {
	_, node := q.lookup(t)
	if node == nil || node.state == held {
		return
	}
	if node.state == ready {
		q.removeReady(&q.levels[q.levelIndex(node.priority)], node.heapAt)
	}
	if node.state == parked {
		q.parked--
	}
	node.state = held
}

// Reoffer asks for another offer to the sender named t, which keeps its
// place: a parked sender is ready again at once; one that is held, or
// whose offer is open (offerOpen, which the caller knows), will not be
// parked when that offer ends without a send; one that is ready or set
// aside is waiting for an offer already. It reports whether t is waiting.
func (q *Queue) Reoffer(t Ticket, offerOpen bool) bool {
	slot, node := q.lookup(t)
	if node == nil {
		return false
	}
	switch {
	case node.state == parked:
		node.state = ready
		q.parked--
		q.pushReady(&q.levels[q.levelIndex(node.priority)], slot)
	case node.state == held || offerOpen:
		node.again = true
	}
	return true
}

// Opened tells the queue that channels of the peer id opened (it
// connected, a message of its ended, or its limit rose): the senders set
// aside whose wants they may meet are ready again. The caller calls it for
// every such peer before the next call to Next.
func (q *Queue) Opened(id peer.ID) {
	if list, ok := q.asideByPeer[id]; ok {
		for _, e := range list {
			if q.asideLive(e) {
				q.wake(e.slot)
			}
		}
		delete(q.asideByPeer, id)
	}
	if len(q.asideAny) == 0 {
		return
	}
	kept := q.asideAny[:0]
	for _, e := range q.asideAny {
		switch {
		case !q.asideLive(e):
		case q.nodes[e.slot].wants != nil && contains(q.nodes[e.slot].wants.avoid, id):
			kept = append(kept, e)
		default:
			q.wake(e.slot)
		}
	}
	clear(q.asideAny[len(kept):])
	q.asideAny = kept
}

// SetAside reports whether a sender may be set aside: if none is, Opened
// has nothing to do.
func (q *Queue) SetAside() bool { return len(q.asideAny) > 0 || len(q.asideByPeer) > 0 }

func (q *Queue) asideLive(e asideEntry) bool {
	node := &q.nodes[e.slot]
	return node.sender != nil && node.generation == e.generation && node.state == setAside && node.asideMark == e.mark
}

// wake makes the sender in slot, set aside, ready again.
func (q *Queue) wake(slot int32) {
	node := &q.nodes[slot]
	node.state = ready
	q.pushReady(&q.levels[q.levelIndex(node.priority)], slot)
}

// setAside takes the ready sender in slot, of level lv, whose wants the
// open channels do not meet, out of its ready heap until Opened wakes it.
func (q *Queue) setAside(lv *level, slot int32) {
	node := &q.nodes[slot]
	q.removeReady(lv, node.heapAt)
	node.state = setAside
	node.asideMark++
	e := asideEntry{slot: slot, generation: node.generation, mark: node.asideMark}
	if len(node.wants.only) == 0 {
		q.asideAny = q.appendAside(q.asideAny, e)
		return
	}
	if q.asideByPeer == nil {
		q.asideByPeer = make(map[peer.ID][]asideEntry)
	}
	for _, id := range node.wants.only {
		q.asideByPeer[id] = q.appendAside(q.asideByPeer[id], e)
	}
}

// appendAside appends e to list, first dropping its stale entries if it is
// full, and growing it if that leaves it more than half full: a list
// compacted at most once per half its length appended costs O(1) per
// entry.
func (q *Queue) appendAside(list []asideEntry, e asideEntry) []asideEntry {
	if len(list) == cap(list) && len(list) >= 8 {
		kept := list[:0]
		for _, x := range list {
			if q.asideLive(x) {
				kept = append(kept, x)
			}
		}
		clear(list[len(kept):])
		list = kept
		if len(list) > cap(list)/2 {
			grown := make([]asideEntry, len(list), 2*cap(list))
			copy(grown, list)
			list = grown
		}
	}
	return append(list, e)
}

// Next returns the sender the next offer goes to: the first sender of the
// highest starving level (see SetPassOverLimit) that may be offered
// channels, or else the first in queue order that may. A sender may be
// offered channels if it is ready, the open channels meet its wants and,
// if it has a class, its class pass admits (every sender's class must be
// one of pass's; pass may be nil when no sender has a class). One call is
// one pass in the sense of limit.Pass: a class found full is not checked
// again for the senders behind it, at that priority or lower ones; the
// caller resets pass between calls. The ready senders whose wants are not
// met that Next comes across are set aside; besides that, Next changes
// nothing but pass. The caller calls Offered once it makes the offer.
func (q *Queue) Next(pass *limit.Pass, open Channels) (Ticket, Sender, bool) {
	chosen := int32(-1)
	for i := range q.levels {
		lv := &q.levels[i]
		starving := q.passOverLimit > 0 && lv.passedOver >= q.passOverLimit
		if chosen >= 0 && !starving {
			continue // only a starving level can come before the one found
		}
		slot := q.firstReady(lv, pass, open)
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

// firstReady returns the first ready sender of lv, in queue order, that may
// be offered channels, or -1; it sets aside those before it whose wants are
// not met. It visits the ready heap in order without changing it, the way
// peerpool.Pool.Best visits its heap: the root first, and a node's children
// once it has been visited.
func (q *Queue) firstReady(lv *level, pass *limit.Pass, open Channels) int32 {
	if len(lv.ready) == 0 {
		return -1
	}
	if slot := lv.ready[0]; q.mayOffer(slot, pass, open) == offerable {
		return slot // the common case: the first ready sender takes it
	}
	chosen := int32(-1)
	walk := append(q.walk[:0], 0)
	for len(walk) > 0 {
		i := walk[0]
		walk = q.popWalk(lv, walk)
		for _, child := range [2]int32{2*i + 1, 2*i + 2} {
			if int(child) < len(lv.ready) {
				walk = q.pushWalk(lv, walk, child)
			}
		}
		slot := lv.ready[i]
		switch q.mayOffer(slot, pass, open) {
		case offerable:
			chosen = slot
		case unmet:
			q.unmet = append(q.unmet, slot)
			continue
		default:
			continue
		}
		break
	}
	q.walk = walk[:0]
	for _, slot := range q.unmet {
		q.setAside(lv, slot)
	}
	q.unmet = q.unmet[:0]
	return chosen
}

type verdict uint8

const (
	offerable verdict = iota
	unmet             // its wants are not met
	classFull
)

func (q *Queue) mayOffer(slot int32, pass *limit.Pass, open Channels) verdict {
	node := &q.nodes[slot]
	switch {
	case node.wants != nil && !node.wants.met(open):
		return unmet
	case node.class != 0 && !admits(pass, node.class):
		return classFull
	}
	return offerable
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

package offerqueue

import (
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// SetPassOverLimit bounds starvation. An offer made to a sender because its
// level comes first by priority passes over every level below that has
// senders waiting; once a level has been passed over k times since it last
// received an offer as a starving level (an offer it gets because the
// levels above had nothing to send does not reset the count), it is
// starving, and the next offer goes to its first sender that
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
	var c Chosen
	ok := q.Pick(pass, open, &c)
	return c.Ticket, c.Sender, ok
}

// Chosen is the sender Pick chose, with everything the offer to it needs to
// know of it, read from its node once: an offer looks its sender up by
// ticket only to remove it once it has sent.
type Chosen struct {
	Ticket Ticket
	Sender Sender
	// Class is the sender's limit.ClassID, if classed.
	Class   limit.ClassID
	Classed bool
	// Bytes is the size the sender declared for each message (SetBytes).
	Bytes int64
	// Cost is what the sender declared each message costs a paced peer
	// (SetCost).
	Cost int64
	// Only and Avoid are its wants (see Wants); the caller must not change
	// them.
	Only, Avoid []peer.ID
	slot        int32
}

// Pick is Next, writing what it chose into *c, every field of it, and
// reporting whether it chose a sender (if not, *c is left as it was). The
// caller passes c to OfferedChosen once it makes the offer, before the
// queue changes. It fills the caller's Chosen rather than returning one:
// returning the struct (over a hundred bytes) cost two copies of it on
// every offer.
func (q *Queue) Pick(pass *limit.Pass, open Channels, c *Chosen) bool {
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
		return false
	}
	node := &q.nodes[chosen]
	c.Ticket, c.Sender, c.Bytes, c.Cost, c.slot = makeTicket(node.generation, chosen), node.sender, node.bytes, node.cost, chosen
	c.Class, c.Classed = 0, false
	if node.class != 0 {
		c.Class, c.Classed = limit.ClassID(node.class-1), true
	}
	c.Only, c.Avoid = nil, nil
	if node.wants != nil {
		c.Only, c.Avoid = node.wants.only, node.wants.avoid
	}
	return true
}

// firstReady returns the first ready sender of lv, in queue order, that may
// be offered channels, or -1; it sets aside those before it whose wants are
// not met. It visits the ready heap in order without changing it, the way
// peerpool.Pool.Best visits its heap: the root first, and a node's children
// once it has been visited.
func (q *Queue) firstReady(lv *level, pass *limit.Pass, open Channels) int32 {
	if !lv.heaped {
		// Every sender of the level is ready, in queue order in its list.
		if q.mayOffer(lv.head, pass, open) == offerable {
			return lv.head // the common case: the first sender takes it
		}
		q.heapify(lv)
	}
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
	slot, node := q.lookup(t)
	if node == nil {
		return
	}
	q.OfferedChosen(&Chosen{slot: slot})
}

// OfferedChosen is Offered for the sender c, which Pick has just returned:
// it looks nothing up.
func (q *Queue) OfferedChosen(c *Chosen) {
	if q.passOverLimit == 0 {
		return
	}
	node := &q.nodes[c.slot]
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

// SetCost records what the sender named t declared each of its messages
// costs a paced peer (offer.Options.Cost); it does nothing if t is not
// waiting.
func (q *Queue) SetCost(t Ticket, cost int64) {
	if _, node := q.lookup(t); node != nil {
		node.cost = cost
	}
}

// Cost returns what the sender named t declared each of its messages costs
// a paced peer: 0 if it declared nothing or is not waiting.
func (q *Queue) Cost(t Ticket) int64 {
	if _, node := q.lookup(t); node != nil {
		return node.cost
	}
	return 0
}

// Bytes returns the size the sender named t declared for each of its
// messages: 0 if it declared none or is not waiting.
func (q *Queue) Bytes(t Ticket) int64 {
	if _, node := q.lookup(t); node != nil {
		return node.bytes
	}
	return 0
}

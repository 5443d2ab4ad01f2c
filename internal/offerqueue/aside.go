package offerqueue

import "github.com/peersched/peersched/peer"

// asideEntry names a sender set aside: it is live while the slot holds the
// same generation, set aside with the same mark.
type asideEntry struct {
	slot       int32
	generation uint32
	mark       uint32
}

// Decline records that an offer to the sender named t ended without a send
// that the host accepted. It is parked, keeping its place, unless Reoffer
// asked for another offer while that one was open (or its sends in
// progress): then it is ready; or, after WaitForOpening, set aside until a
// channel it wants opens. It releases a hold.
func (q *Queue) Decline(t Ticket) {
	slot, node := q.lookup(t)
	if node == nil {
		return
	}
	lv := &q.levels[q.levelIndex(node.priority)]
	if node.state == parked {
		return
	}
	wasReady := node.state == ready
	switch {
	case node.again:
		node.again, node.untilOpening = false, false
		if !wasReady {
			node.state = ready
			q.readyAgain(lv, slot)
		}
	case node.untilOpening:
		node.untilOpening = false
		if wasReady {
			q.unready(lv, slot)
		}
		q.asideUntilOpening(slot)
	default:
		if wasReady {
			q.unready(lv, slot)
		}
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
	slot, node := q.lookup(t)
	if node == nil || node.state == held {
		return
	}
	if node.state == ready {
		q.unready(&q.levels[q.levelIndex(node.priority)], slot)
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
		q.readyAgain(&q.levels[q.levelIndex(node.priority)], slot)
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
	q.readyAgain(&q.levels[q.levelIndex(node.priority)], slot)
}

// setAside takes the ready sender in slot, of level lv, whose wants the
// open channels do not meet, out of its ready heap until Opened wakes it.
func (q *Queue) setAside(lv *level, slot int32) {
	node := &q.nodes[slot]
	q.unready(lv, slot)
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

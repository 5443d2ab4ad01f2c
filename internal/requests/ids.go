package requests

import (
	"github.com/peersched/peersched/internal/slab"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// idSpace issues request IDs from a receiver.IDRange, for a Table whose slots'
// handles (64 bits: slot and generation) do not fit the host's wire.
//
// IDs are handed out in order, from a cursor that wraps from Hi-1 to Lo (one
// lap), skipping every ID that some slot remembers: the ID of the request a
// slot holds, and of the last request it held, until the slot is given to
// another message. So an outstanding request's ID is never issued again, an
// ID comes back only after the cursor has gone once around the whole range
// (every other ID it could take issued in between), and while the slot of an
// ended request remembers it, a stray response to its ID is told apart
// exactly, as with 64-bit handles: duplicate, late or unknown.
//
// What no table can do with an ID of a few bits: tell a response meant for
// the holder of an ID a whole lap ago from one for its current holder, when
// both requests went to the same peer (from any other peer it is dropped as
// ErrWrongPeer). The lap is what bounds that: with [2^24, 2^32), some 4.3
// billion requests are issued before an ID comes back, far beyond any
// response's lateness.
//
// The cost beside 64-bit handles: a map entry per remembered ID and eight
// bytes per slot, and a map lookup to find a response's request.
type idSpace struct {
	r      receiver.IDRange
	next   uint64 // the cursor: the next ID to try
	lapped bool   // the cursor has wrapped: every ID in the range has been issued
	// bySlot[s] is the ID of slot s's current or last request; 0 if none,
	// or if the slot has been given to a message since.
	bySlot []uint64
	// handles maps every ID in bySlot to its request's handle: the slot's
	// current holder while the request is outstanding, its last holder once
	// it has ended.
	handles map[uint64]slab.Handle
}

func newIDSpace(r receiver.IDRange) *idSpace {
	return &idSpace{r: r, next: r.Lo, handles: make(map[uint64]slab.Handle)}
}

// forget makes slot's last request's ID unknown to the table (a response to
// it is then late): the slot is being given to another message.
func (s *idSpace) forget(slot int32) {
	if int(slot) >= len(s.bySlot) {
		s.bySlot = append(s.bySlot, make([]uint64, int(slot)+1-len(s.bySlot))...)
		return
	}
	if id := s.bySlot[slot]; id != 0 {
		delete(s.handles, id)
		s.bySlot[slot] = 0
	}
}

// issue gives the request that holds h an ID, from the cursor on, and
// returns it; outstanding reports whether a remembered handle's request is
// still outstanding. The slot must have been forgotten since it was last
// given out, and fewer requests than
// the range holds may be outstanding (the scheduler's cap, checked against
// the range's size, sees to that).
//
// Normally the first ID tried is free. An ID remembered only by a free slot
// (its request ended) is skipped, but if the cursor goes a whole lap without
// finding a free ID, the first such one is taken and its slot forgotten:
// requests outstanding are fewer than the IDs, so there is one.
func (s *idSpace) issue(h slab.Handle, outstanding func(slab.Handle) bool) uint64 {
	var fallback uint64
	for range s.r.Size() {
		id := s.next
		s.next++
		if s.next == s.r.Hi {
			s.next, s.lapped = s.r.Lo, true
		}
		old, taken := s.handles[id]
		if !taken {
			s.take(id, h)
			return id
		}
		if fallback == 0 && !outstanding(old) {
			fallback = id
		}
	}
	if fallback == 0 {
		panic("receiver: every request ID in the range is outstanding; the cap on requests must not exceed the range")
	}
	s.forget(s.handles[fallback].Slot())
	s.take(fallback, h)
	return fallback
}

func (s *idSpace) take(id uint64, h slab.Handle) {
	s.bySlot[h.Slot()] = id
	s.handles[id] = h
}

// handle returns the handle of the request id names, current or ended, and
// whether a slot remembers it.
func (s *idSpace) handle(id peer.RequestID) (slab.Handle, bool) {
	h, ok := s.handles[uint64(id)]
	return h, ok
}

// id returns the ID of the request that holds (or last held) h's slot.
func (s *idSpace) id(h slab.Handle) peer.RequestID {
	return peer.RequestID(s.bySlot[h.Slot()])
}

// issued reports whether id was ever issued: it is in the range, and the
// cursor has passed it.
func (s *idSpace) issued(id peer.RequestID) bool {
	v := uint64(id)
	if v < s.r.Lo || v >= s.r.Hi {
		return false
	}
	return s.lapped || v < s.next
}

package requests

import (
	"hash/maphash"
	"math"
	"time"

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
// A response carries only its ID and its peer, so nothing can tell a late
// answer to an ID's last request from an answer to its next one if both went
// to the same peer. So an ID is quarantined: it is not issued again to the
// peer its last request went to until that request's deadline has passed by
// as long again as its timeout (its send plus twice its timeout: see
// quarantineEnd). The cursor passes over an ID quarantined for the request's
// peer and takes the next that is not; a quarantined ID may go to another
// peer, whose answers are the only ones that can then complete it (a late
// answer from the old peer is ErrWrongPeer). Only if every ID that is not
// outstanding is quarantined for the request's peer (the range is too small
// for the traffic) is one reissued early: the first the cursor came to (the
// cursor then goes on from it), and reusedEarly counts it.
//
// The quarantine is kept by block of IDs, not by ID, so that its memory does
// not grow with the range: the range is cut into at most quarantineBlocks
// blocks of equal size (of one ID each in a range that small), and each
// block keeps two records: what was issued from it on the cursor's current
// pass, and, merged, what was issued on earlier passes and may still be
// quarantined. An ID ahead of the cursor was last issued on an earlier pass,
// so the second record decides: the block's IDs are quarantined for a peer
// while any of those requests' quarantines runs and they went to that peer,
// or to several peers. Within a block of one ID this is exact; with larger
// blocks it may keep an ID from a peer longer than its own request needs,
// never shorter.
//
// The cost beside 64-bit handles: a map entry per remembered ID and eight
// bytes per slot, a map lookup to find a response's request, and the
// blocks' records (48 bytes each, made with the range: 48 bytes per ID in a
// range of up to quarantineBlocks IDs, 768 KiB in a larger one).
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

	blockSize   uint64
	blocks      []idBlock
	seed        maphash.Seed // for peer keys
	reusedEarly uint64       // IDs issued to a peer they were quarantined for
}

// quarantineBlocks is the most blocks an idSpace keeps quarantine records
// for.
const quarantineBlocks = 1 << 14

// idBlock is the quarantine of one block of IDs.
type idBlock struct {
	earlier idRecord // requests issued from the block on earlier passes
	current idRecord // on the cursor's current pass
}

// idRecord covers some requests: until when the last of their quarantines
// runs, and the peer they went to, or many.
type idRecord struct {
	until time.Duration // 0 (or any time passed): it covers nothing
	peer  uint64        // the key of the peer they went to (see peerKey)
	many  bool          // they went to more than one peer
}

// holds reports whether r quarantines its IDs for the peer of key peer at
// now.
func (r *idRecord) holds(peer uint64, now time.Duration) bool {
	return now < r.until && (r.many || r.peer == peer)
}

// add makes r cover o too.
func (r *idRecord) add(o idRecord, now time.Duration) {
	switch {
	case now >= o.until:
	case now >= r.until:
		*r = o
	default:
		r.until = max(r.until, o.until)
		r.many = r.many || o.many || r.peer != o.peer
	}
}

// quarantineEnd returns when the quarantine of a request sent at now with
// a (hard) timeout ends: once its deadline has passed by as long again.
func quarantineEnd(now, timeout time.Duration) time.Duration {
	if timeout > (math.MaxInt64-now)/2 {
		return math.MaxInt64
	}
	return now + 2*timeout
}

func newIDSpace(r receiver.IDRange) *idSpace {
	size := r.Size() // ceilings below without overflow, for a range of up to 2^64-1 IDs
	blockSize := (size-1)/quarantineBlocks + 1
	return &idSpace{r: r, next: r.Lo, handles: make(map[uint64]slab.Handle),
		blockSize: blockSize, blocks: make([]idBlock, (size-1)/blockSize+1), seed: maphash.MakeSeed()}
}

// peerKey returns the key the quarantine knows the peer named id by: two
// peers may share one (then each is kept from the other's IDs too, which
// is safe), one peer never has two.
func (s *idSpace) peerKey(id peer.ID) uint64 { return maphash.String(s.seed, string(id)) }

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

// issue gives the request that holds h, sent at now to the peer of key
// peer, an ID, from the cursor on, and returns it; until is when the
// request's quarantine will end, and outstanding reports whether a
// remembered handle's request is still outstanding. The slot must have
// been forgotten since it was last given out, and fewer requests than the
// range holds may be outstanding (the scheduler's cap, checked against the
// range's size, sees to that).
//
// Normally the first ID tried is free. An ID quarantined for the peer is
// passed over, with the rest of its block. An ID remembered only by a free
// slot (its request ended) is skipped too, but if the cursor goes a whole
// lap without finding a free ID, the first such one is taken and its slot
// forgotten; failing that, the first ID passed over for its quarantine
// that is not outstanding (see idSpace).
func (s *idSpace) issue(h slab.Handle, peer uint64, now, until time.Duration, outstanding func(slab.Handle) bool) uint64 {
	var fallback, early uint64
	for n := uint64(0); n < s.r.Size(); {
		id := s.next
		off := id - s.r.Lo
		b := &s.blocks[off/s.blockSize]
		if off%s.blockSize == 0 { // the cursor enters the block: a new pass
			b.earlier.add(b.current, now)
			b.current = idRecord{}
		}
		if b.earlier.holds(peer, now) {
			if old, taken := s.handles[id]; early == 0 && (!taken || !outstanding(old)) {
				early = id
			}
			step := min(s.blockSize-off%s.blockSize, s.r.Hi-id)
			s.advance(step)
			n += step
			continue
		}
		s.advance(1)
		n++
		old, taken := s.handles[id]
		if !taken {
			s.take(id, h, peer, now, until)
			return id
		}
		if fallback == 0 && !outstanding(old) {
			fallback = id
		}
	}
	if fallback == 0 {
		s.reusedEarly++
		fallback = early
		for id, n := s.next, uint64(0); fallback == 0 && n < s.r.Size(); id, n = s.after(id), n+1 {
			// Only if every ID passed over for its quarantine was
			// outstanding where the cursor met its block: look for
			// one that is not.
			if old, taken := s.handles[id]; !taken || !outstanding(old) {
				fallback = id
			}
		}
		if fallback == 0 {
			panic("receiver: every request ID in the range is outstanding; the cap on requests must not exceed the range")
		}
		s.next = s.after(fallback) // the next early reuse takes the next ID, in order
	}
	if old, taken := s.handles[fallback]; taken {
		s.forget(old.Slot())
	}
	s.take(fallback, h, peer, now, until)
	return fallback
}

// advance moves the cursor k IDs on, k at most up to Hi.
func (s *idSpace) advance(k uint64) {
	s.next += k
	if s.next == s.r.Hi {
		s.next, s.lapped = s.r.Lo, true
	}
}

// after returns the ID after id in the range, wrapping.
func (s *idSpace) after(id uint64) uint64 {
	if id+1 == s.r.Hi {
		return s.r.Lo
	}
	return id + 1
}

func (s *idSpace) take(id uint64, h slab.Handle, peer uint64, now, until time.Duration) {
	s.bySlot[h.Slot()] = id
	s.handles[id] = h
	s.blocks[(id-s.r.Lo)/s.blockSize].current.add(idRecord{until: until, peer: peer}, now)
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

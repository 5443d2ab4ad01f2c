package receiver

import (
	"time"

	"github.com/peersched/peersched/peer"
)

// Table remembers every outstanding request: its receiver, the peer it was
// sent to, its deadline and when it was sent. It hands out request IDs and
// decides, for each event that can end a request (a response, its deadline,
// its peer's disconnect, a shutdown, a withdrawal), whether the event ends it
// and how. It never calls a receiver: it returns a Finished record and the
// scheduler makes the call after releasing its locks.
//
// A request is "sending" from Add until the host's send returns (Sent or
// Unsend). An event that would end it meanwhile is held back and applied by
// Sent, or dropped by Unsend, so a failed send never reaches its receiver.
//
// Requests to one peer are linked in a list, so failing them on disconnect
// costs O(that peer's requests). The zero Table is ready to use; it is not
// safe for concurrent use (the scheduler guards it with its requests lock).
type Table struct {
	entries []entry
	free    []int32       // slots free for reuse, most recently freed last
	owners  []owner       // per peer slot: the connected peer's identity and its requests
	n       int           // requests outstanding
	early   map[int32]any // responses held back while their request is sent
	visited int           // entries FailPeer has looked at, ever
}

type state uint8

const (
	stateFree state = iota
	stateSending
	statePending
)

// entry is one slot of the table. While free it remembers how its last
// request ended, to tell a duplicate or late response from an unknown one.
type entry struct {
	receiver   Receiver // nil once withdrawn
	peer       peer.Ref
	deadline   uint64 // the caller's handle on this request's deadline
	sentAt     time.Duration
	generation uint32 // of the current request, or of the last one while free
	prev, next int32  // in the owner's list; -1 ends it
	state      state
	linked     bool   // in its owner's list
	held       Reason // outcome held back while sending; while free, how the request before the last ended
	lastEnd    Reason // how the slot's last ended request ended (answered is heldResponse)
}

// heldResponse marks a response in entry.held and entry.lastEnd, beside the
// failure reasons.
const heldResponse Reason = 255

// unsent marks, in entry.lastEnd, a request whose send failed: the peer never
// saw it, so any response to it is unknown.
const unsent Reason = 254

type owner struct {
	id          peer.ID
	incarnation uint32
	head        int32
}

// Finished describes a request that an event has ended.
type Finished struct {
	ID       RequestID
	Receiver Receiver // nil if the request was withdrawn: call nothing
	Peer     peer.Ref
	PeerID   peer.ID
	Deadline uint64        // the handle given to Arm; the caller disarms it
	SentAt   time.Duration // as given to Add
	Reason   Reason        // 0 when answered
	Response any           // the response, when answered
}

// Answered reports whether the request ended with a response.
func (f *Finished) Answered() bool { return f.Reason == 0 }

// Register records that the peer ref, named id, is connected, so responses
// from it can be checked against the requests sent to it.
func (t *Table) Register(ref peer.Ref, id peer.ID) {
	slot := ref.Slot()
	for len(t.owners) <= slot {
		t.owners = append(t.owners, owner{head: -1})
	}
	t.owners[slot] = owner{id: id, incarnation: refIncarnation(ref), head: -1}
}

// Add records a new request to the peer ref, sent at sentAt, in the sending
// state, and returns its ID. The peer must be registered.
func (t *Table) Add(r Receiver, ref peer.Ref, sentAt time.Duration) RequestID {
	var slot int32
	if n := len(t.free); n > 0 {
		slot = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		slot = int32(len(t.entries))
		t.entries = append(t.entries, entry{})
	}
	e := &t.entries[slot]
	gen := e.generation + 1
	if gen == 0 {
		gen = 1 // generation 0 never names a request: a zero entry is never in use
	}
	// Field by field, not *e = entry{...}: a whole-struct store of a type
	// with pointers goes through typedmemmove, which cost more than the rest
	// of Add put together. link sets prev, next and linked.
	e.receiver, e.peer, e.deadline, e.sentAt, e.generation = r, ref, 0, sentAt, gen
	// lastEnd is kept: while the slot serves this request it tells how the
	// slot's previous request ended, to classify a stray response to it.
	e.state, e.held = stateSending, 0
	t.link(slot)
	t.n++
	return makeID(gen, slot)
}

// Arm records the handle of the request's deadline.
func (t *Table) Arm(id RequestID, deadline uint64) {
	if _, e := t.lookup(id); e != nil && e.state != stateFree {
		e.deadline = deadline
	}
}

// Sent records that the host accepted the request. If an event ended the
// request while it was being sent, Sent finishes it now and returns it.
func (t *Table) Sent(id RequestID) (f Finished, ended bool) {
	slot, e := t.lookup(id)
	if e == nil || e.state != stateSending {
		return Finished{}, false
	}
	if e.held == 0 {
		e.state = statePending
		return Finished{}, false
	}
	reason := e.held
	var response any
	if reason == heldResponse {
		reason = 0
		response = t.early[slot]
		delete(t.early, slot)
	}
	return t.finish(slot, reason, response), true
}

// Unsend forgets a request whose send failed and returns it (with Receiver
// nil: nothing is to be called). The caller reopens its channel and disarms
// its deadline.
func (t *Table) Unsend(id RequestID) (f Finished, ok bool) {
	slot, e := t.lookup(id)
	if e == nil || e.state != stateSending {
		return Finished{}, false
	}
	delete(t.early, slot)
	e.receiver = nil
	f = t.finish(slot, 0, nil)
	t.entries[slot].lastEnd = unsent
	return f, true
}

// Respond matches a response from the peer named from to request id. It
// returns the finished request when the response ends it; ended is false with
// a nil error when the response was accepted but held back because the request
// is still being sent. Otherwise it returns the reason the response is
// dropped, changing nothing: ErrUnknownRequest, ErrWrongPeer,
// ErrDuplicateResponse or ErrLateResponse.
func (t *Table) Respond(id RequestID, from peer.ID, response any) (f Finished, ended bool, err error) {
	slot, e := t.lookup(id)
	if e == nil {
		if end, ok := t.endOfPrevious(id); ok {
			// The request just before the slot's current one: its slot
			// remembers how it ended.
			return Finished{}, false, strayResponseError(end)
		}
		if t.issuedBefore(id) {
			// Its slot has gone to newer requests since it ended (the next
			// request takes the slot freed last, so that is at once): a
			// response to it is late, not a response to an unknown request.
			return Finished{}, false, ErrLateResponse
		}
		return Finished{}, false, ErrUnknownRequest
	}
	if e.state == stateFree {
		return Finished{}, false, strayResponseError(e.lastEnd)
	}
	// A request whose outcome is held back while it is sent has ended: like
	// a free entry above, it answers duplicate or late whoever responds (its
	// peer may even have disconnected, and no longer be its owner).
	switch e.held {
	case heldResponse:
		return Finished{}, false, ErrDuplicateResponse
	case Timeout, Disconnected, Shutdown:
		return Finished{}, false, ErrLateResponse
	}
	if t.ownerID(e.peer) != from {
		return Finished{}, false, ErrWrongPeer
	}
	if e.state == stateSending {
		e.held = heldResponse
		if t.early == nil {
			t.early = make(map[int32]any)
		}
		t.early[slot] = response
		return Finished{ID: id, Deadline: e.deadline}, false, nil
	}
	return t.finish(slot, 0, response), true, nil
}

// Expire ends request id at its deadline. ended is false if the request is
// not outstanding, or is still being sent (then the timeout is held back).
func (t *Table) Expire(id RequestID) (f Finished, ended bool) {
	slot, e := t.lookup(id)
	if e == nil || e.state == stateFree {
		return Finished{}, false
	}
	e.deadline = 0
	if e.state == stateSending {
		if e.held == 0 {
			e.held = Timeout
		}
		return Finished{}, false
	}
	return t.finish(slot, Timeout, nil), true
}

// FailPeer ends every request to the peer ref with reason Disconnected,
// appending them to dst, and forgets the peer. Requests still being sent are
// held back as disconnected; their deadlines are appended to disarm.
func (t *Table) FailPeer(ref peer.Ref, dst []Finished, disarm []uint64) ([]Finished, []uint64) {
	slot := ref.Slot()
	if slot >= len(t.owners) || t.owners[slot].incarnation != refIncarnation(ref) {
		return dst, disarm
	}
	for s := t.owners[slot].head; s >= 0; {
		t.visited++
		e := &t.entries[s]
		next := e.next
		if e.state == stateSending {
			t.unlink(s)
			if e.held == 0 {
				e.held = Disconnected // a response that already came still wins
			}
			if e.deadline != 0 {
				disarm = append(disarm, e.deadline)
				e.deadline = 0
			}
		} else {
			dst = append(dst, t.finish(s, Disconnected, nil))
		}
		s = next
	}
	t.owners[slot] = owner{head: -1}
	return dst, disarm
}

// FailAll ends every outstanding request with reason Shutdown, appending them
// to dst. Requests still being sent are held back as shut down, unless an
// earlier event already decided their outcome: as in FailPeer, a response
// that already came (and was accepted) still wins, and so does a timeout.
func (t *Table) FailAll(dst []Finished) []Finished {
	for s := range t.entries {
		e := &t.entries[s]
		switch e.state {
		case stateSending:
			if e.held == 0 {
				e.held = Shutdown
			}
		case statePending:
			dst = append(dst, t.finish(int32(s), Shutdown, nil))
		}
	}
	return dst
}

// Withdraw takes the receiver away from request id: none of its methods will
// be called for it. The request stays outstanding, holding its channel, until
// its response or deadline comes. ok is false if the request is no longer
// outstanding or was already withdrawn.
func (t *Table) Withdraw(id RequestID) bool {
	_, e := t.lookup(id)
	if e == nil || e.state == stateFree || e.receiver == nil {
		return false
	}
	e.receiver = nil
	return true
}

// Visited returns how many requests FailPeer has looked at so far: the work
// disconnects have cost, which must track the disconnected peers' own
// requests and not the table's size.
func (t *Table) Visited() int { return t.visited }

// Len returns the number of outstanding requests, withdrawn ones included.
func (t *Table) Len() int { return t.n }

func (t *Table) finish(slot int32, reason Reason, response any) Finished {
	e := &t.entries[slot]
	f := Finished{
		ID:       makeID(e.generation, slot),
		Receiver: e.receiver,
		Peer:     e.peer,
		PeerID:   t.ownerID(e.peer),
		Deadline: e.deadline,
		SentAt:   e.sentAt,
		Reason:   reason,
		Response: response,
	}
	if e.linked {
		t.unlink(slot)
	}
	end := reason
	if end == 0 {
		end = heldResponse
	}
	// Field by field for the reason given in Add; unlink (or the entry
	// never having been linked) leaves prev, next and linked reset.
	e.receiver, e.peer, e.deadline, e.sentAt = nil, peer.Ref{}, 0, 0
	e.state, e.held, e.lastEnd = stateFree, e.lastEnd, end // held: how the request before ended
	t.free = append(t.free, slot)
	t.n--
	return f
}

func (t *Table) ownerID(ref peer.Ref) peer.ID {
	slot := ref.Slot()
	if slot < len(t.owners) && t.owners[slot].incarnation == refIncarnation(ref) {
		return t.owners[slot].id
	}
	return ""
}

func (t *Table) link(slot int32) {
	e := &t.entries[slot]
	o := &t.owners[e.peer.Slot()]
	e.next = o.head
	e.prev = -1
	if o.head >= 0 {
		t.entries[o.head].prev = slot
	}
	o.head = slot
	e.linked = true
}

func (t *Table) unlink(slot int32) {
	e := &t.entries[slot]
	if e.prev >= 0 {
		t.entries[e.prev].next = e.next
	} else {
		t.owners[e.peer.Slot()].head = e.next
	}
	if e.next >= 0 {
		t.entries[e.next].prev = e.prev
	}
	e.prev, e.next, e.linked = -1, -1, false
}

func (t *Table) lookup(id RequestID) (int32, *entry) {
	slot := int64(uint32(id)) - 1
	if slot < 0 || slot >= int64(len(t.entries)) {
		return 0, nil
	}
	e := &t.entries[slot]
	if e.generation != uint32(id>>32) || e.generation == 0 {
		return 0, nil
	}
	return int32(slot), e
}

// strayResponseError says why a response to a request that ended as end is
// dropped.
func strayResponseError(end Reason) error {
	switch end {
	case heldResponse:
		return ErrDuplicateResponse
	case unsent, 0:
		return ErrUnknownRequest
	}
	return ErrLateResponse
}

// endOfPrevious reports how the request that id names ended, if it is the
// one its slot served just before the request it serves now.
func (t *Table) endOfPrevious(id RequestID) (Reason, bool) {
	slot, gen := int64(uint32(id))-1, uint32(id>>32)
	if slot < 0 || slot >= int64(len(t.entries)) || gen == 0 {
		return 0, false
	}
	e := &t.entries[slot]
	switch {
	case e.generation != gen+1:
		return 0, false
	case e.state == stateFree:
		return e.held, true // finish moved it there
	}
	return e.lastEnd, true
}

// issuedBefore reports whether id names an earlier request of a slot that
// has since been reused: its generation is older than the slot's.
func (t *Table) issuedBefore(id RequestID) bool {
	slot, gen := int64(uint32(id))-1, uint32(id>>32)
	return slot >= 0 && slot < int64(len(t.entries)) && gen != 0 && gen < t.entries[slot].generation
}

func makeID(generation uint32, slot int32) RequestID {
	return RequestID(uint64(generation)<<32 | uint64(slot+1))
}

func refIncarnation(ref peer.Ref) uint32 { return uint32(ref.Pack() >> 32) }

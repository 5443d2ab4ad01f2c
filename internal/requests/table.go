// Package requests holds the scheduler's record of every message that keeps
// a channel closed: the Table of requests (with their receivers, peers and
// deadlines) and notifications, and the request IDs it issues.
package requests

import (
	"reflect"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/slab"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Table remembers every message that keeps a channel closed: each request,
// with its receiver, the peer it was sent to and when; and each
// notification, until the peer has had time to digest it. Every one has its
// deadline in the same slot as its record (a slab.Slab), so a pending
// request costs one 56-byte slot, and its ID is the slot's handle (unless
// the IDs are limited to a range: see SetIDRange). Terms, if any message has
// them, take 4 bytes more per slot, in a slice beside.
//
// The table hands out request IDs and decides, for each event that can end
// a request (a response, a refusal, its deadline, its peer's disconnect, a shutdown, a
// withdrawal), whether the event ends it and how. It never calls a receiver:
// it returns a Finished record and the scheduler makes the call after
// releasing its locks.
//
// A request is "sending" from Add until the host's send returns (Sent or
// Unsend). An event that would end it meanwhile is held back and applied by
// Sent, or dropped by Unsend, so a failed send never reaches its receiver.
//
// Messages to one peer are linked in a list, so failing them on disconnect
// costs O(that peer's messages). The zero Table is ready to use; it is not
// safe for concurrent use (the scheduler guards it with its requests lock).
type Table struct {
	slab    slab.Slab[entry]
	terms   []Terms                // by slot; nil until a message has terms, so that hosts without them pay nothing
	owners  []owner                // per peer slot: the connected peer's identity and its messages
	n       int                    // requests outstanding
	early   map[peer.RequestID]any // responses held back while their request is sent, by handle
	visited int                    // entries FailPeer has looked at, ever
	ids     *idSpace               // nil: a request's ID is its slot's handle
	soft    []softState            // by slot; nil until a request has a soft deadline (see AddSoft)
	expect  []reflect.Type         // by slot; nil until a request expects a type (see Add)
}

// softState is the second deadline of a request sent with a soft one. Its
// slot is armed first for the soft deadline, then, once that passes, for the
// hard one, as if armed at the instant the soft one was due: the slab's arm
// time is then the send time plus soft.
type softState struct {
	soft, hard time.Duration // after the send
	phase      softPhase
}

type softPhase uint8

const (
	noSoft     softPhase = iota // no soft deadline, or the request ended
	softArmed                   // the slot's deadline is the soft one
	softPassed                  // the soft deadline passed; armed for the hard one
	softHeld                    // it passed while the request was being sent: reported by SlowHeld
)

// Slow names a request whose soft deadline has passed, still live, and the
// receiver to tell.
type Slow struct {
	ID       peer.RequestID
	Receiver receiver.SlowReceiver
	PeerID   peer.ID
	handle   slab.Handle // the request's slot and generation: see StillLive
}

type state uint8

const (
	stateFree state = iota
	stateSending
	statePending
	stateDigesting // a notification, until its deadline
)

// entry is one message's record, stored in its deadline's slot. While free
// it remembers how the slot's last request ended, to tell a duplicate or
// late response from an unknown one. Its peer is the owner slot it is
// linked under; an entry whose peer disconnected while it was being sent is
// unlinked and names no peer.
type entry struct {
	receiver   receiver.Receiver // nil once withdrawn, and for notifications
	peer       int32             // owner slot, while linked
	prev, next int32             // in the owner's list; -1 ends it
	state      state
	linked     bool
	held       receiver.Reason // outcome held back while sending; while free, how the request before the last ended
	lastEnd    receiver.Reason // how the slot's last ended request ended (answered is heldResponse)
}

// Terms are what the scheduler agreed to when it sent a message, kept with
// the message so that it can settle them when the message ends, whichever
// way it ends. The table stores them and hands them back in Finished; it
// never reads them.
type Terms struct {
	// Class is the limit.ClassID of the class the message booked, plus one,
	// so that the zero Terms books none.
	Class int32
}

// heldResponse marks a response in entry.held and entry.lastEnd, beside the
// failure reasons.
const heldResponse receiver.Reason = 255

// unsent marks, in entry.lastEnd, a request whose send failed (the peer
// never saw it) or a notification: a response naming either is unknown.
const unsent receiver.Reason = 254

type owner struct {
	id   peer.ID
	ref  peerpool.Ref // zero while no peer is registered in the slot
	head int32
}

// Finished describes a message that an event has ended.
type Finished struct {
	ID           peer.RequestID    // 0 for a notification
	Receiver     receiver.Receiver // nil if the request was withdrawn, or for a notification: call nothing
	Peer         peerpool.Ref      // zero if the peer has disconnected since
	PeerID       peer.ID           // "" if the peer has disconnected since
	SentAt       time.Duration
	Response     any             // the response, when answered
	Reason       receiver.Reason // 0 when answered
	Notification bool            // a notification, done being digested (or gone with its peer)
	Terms        Terms           // as given to Add or Notify
}

// Answered reports whether the request ended with a response.
func (f *Finished) Answered() bool { return f.Reason == 0 && !f.Notification }

// SetIDRange makes the table issue request IDs from r instead of its slots'
// 64-bit handles (see IDRange), or from all 64 bits again for the zero
// IDRange. An ID of r is quarantined from the peer its last request went
// to (see idSpace; ReusedEarly counts the exceptions). r must be valid (see
// IDRange.Validate), and the caller must keep the requests outstanding
// fewer than r.Size(). Call it before the first Add.
func (t *Table) SetIDRange(r receiver.IDRange) {
	t.ids = nil
	if !r.IsZero() {
		t.ids = newIDSpace(r)
	}
}

// handle returns the slot handle of the request id names, or 0 if no slot
// remembers it. Every method that takes an ID starts here; internally the
// table deals in handles.
func (t *Table) handle(id peer.RequestID) slab.Handle {
	if t.ids == nil {
		return slab.Handle(id)
	}
	h, _ := t.ids.handle(id)
	return h
}

// Register records that the peer ref, named id, is connected, so responses
// from it can be checked against the requests sent to it.
func (t *Table) Register(ref peerpool.Ref, id peer.ID) {
	slot := ref.Slot()
	for len(t.owners) <= slot {
		t.owners = append(t.owners, owner{head: -1})
	}
	t.owners[slot] = owner{id: id, ref: ref, head: -1}
}

// Add records a new request to the peer ref, sent at now with a deadline
// timeout later under terms, in the sending state, and returns its ID. The
// request accepts only responses of type expect (or, if expect is an
// interface type, of a type that implements it): Respond refuses others
// with ErrWrongResponseType and leaves the request as it was. A nil expect
// accepts any response. The peer must be registered.
func (t *Table) Add(r receiver.Receiver, ref peerpool.Ref, now, timeout time.Duration, terms Terms, expect reflect.Type) peer.RequestID {
	_, id := t.add(r, ref, now, timeout, timeout, terms, expect)
	return id
}

// add is Add, returning the request's slot handle beside its ID; the slot
// is armed for timeout, and hard is the request's last deadline.
func (t *Table) add(r receiver.Receiver, ref peerpool.Ref, now, timeout, hard time.Duration, terms Terms, expect reflect.Type) (slab.Handle, peer.RequestID) {
	h, e := t.slab.AllocArmed(now, timeout)
	// Field by field, not *e = entry{...}: a whole-struct store of a type
	// with pointers goes through typedmemmove. lastEnd is kept: while the
	// slot serves this request it tells how the slot's previous request
	// ended, to classify a stray response to it.
	e.receiver, e.state, e.held = r, stateSending, 0
	t.setTerms(h.Slot(), terms)
	t.setExpect(h.Slot(), expect)
	t.link(e, h.Slot(), ref)
	t.n++
	if t.ids == nil {
		return h, peer.RequestID(h)
	}
	t.ids.forget(h.Slot())
	key := t.ids.peerKey(t.owners[e.peer].id)
	return h, peer.RequestID(t.ids.issue(h, key, now, quarantineEnd(now, hard), func(old slab.Handle) bool { return t.slab.Get(old) != nil }))
}

// AddSoft is Add for a request with two deadlines: soft after now, at which
// Expire reports it slow and it stays live, and hard after now (hard > soft
// > 0), at which it fails with Timeout as Add's one deadline does. The
// table keeps 24 bytes more per slot for them, in a slice beside, made when
// the first such request comes.
func (t *Table) AddSoft(r receiver.Receiver, ref peerpool.Ref, now, soft, hard time.Duration, terms Terms, expect reflect.Type) peer.RequestID {
	h, id := t.add(r, ref, now, soft, hard, terms, expect)
	slot := int(h.Slot())
	for len(t.soft) <= slot {
		t.soft = append(t.soft, softState{})
	}
	t.soft[slot] = softState{soft: soft, hard: hard, phase: softArmed}
	return id
}

// setExpect records the response type the request in slot expects (see
// Add). The slice that keeps the types, beside the slab, is made when the
// first request expects one; until then every request accepts any response.
func (t *Table) setExpect(slot int32, typ reflect.Type) {
	if typ == nil {
		if int(slot) < len(t.expect) {
			t.expect[slot] = nil
		}
		return
	}
	for len(t.expect) <= int(slot) {
		t.expect = append(t.expect, nil)
	}
	t.expect[slot] = typ
}

// accepts reports whether the request in slot takes response, by its
// type. It compares two type words in the usual case; only an expected
// interface type costs a method-set walk.
func (t *Table) accepts(slot int32, response any) bool {
	if int(slot) >= len(t.expect) {
		return true
	}
	want := t.expect[slot]
	if want == nil {
		return true
	}
	got := reflect.TypeOf(response)
	return got == want || (got != nil && want.Kind() == reflect.Interface && got.Implements(want))
}

// softOf returns the soft deadline state of slot, or nil if no request ever
// had one there.
func (t *Table) softOf(slot int32) *softState {
	if int(slot) < len(t.soft) {
		return &t.soft[slot]
	}
	return nil
}

// passSoft re-arms the request in h's slot, whose deadline has just fired,
// for its hard deadline if the one that fired was its soft one, moving it
// to phase next; it reports whether it did.
func (t *Table) passSoft(h slab.Handle, next softPhase) bool {
	st := t.softOf(h.Slot())
	if st == nil || st.phase != softArmed {
		return false
	}
	sentAt, _ := t.slab.ArmedAt(h)
	t.slab.Arm(h, sentAt+st.soft, st.hard-st.soft)
	st.phase = next
	return true
}

// SlowHeld returns, once, the slow report of request id if its soft
// deadline passed while it was being sent; the scheduler asks after Sent,
// when the request goes on. ok is false otherwise, and for a withdrawn
// request or a receiver that is no SlowReceiver.
func (t *Table) SlowHeld(id peer.RequestID) (s Slow, ok bool) {
	if t.soft == nil {
		return Slow{}, false
	}
	h := t.handle(id)
	e := t.slab.Get(h)
	if e == nil || e.state != statePending {
		return Slow{}, false
	}
	st := t.softOf(h.Slot())
	if st == nil || st.phase != softHeld {
		return Slow{}, false
	}
	st.phase = softPassed
	return t.slow(h, id, e)
}

// slow returns the slow report of request id, in h's slot and recorded as
// e, if its receiver wants one.
func (t *Table) slow(h slab.Handle, id peer.RequestID, e *entry) (Slow, bool) {
	sr, ok := e.receiver.(receiver.SlowReceiver)
	if !ok {
		return Slow{}, false
	}
	return Slow{ID: id, Receiver: sr, PeerID: t.peerID(e), handle: h}, true
}

// StillLive reports whether the request s reports is still outstanding and
// not withdrawn: whether the slow report the scheduler took earlier may
// still be made. It names the request by its slot and generation, not its
// ID, which a range of IDs may reuse once the request ends.
func (t *Table) StillLive(s Slow) bool {
	e := t.slab.Get(s.handle)
	return e != nil && e.state == statePending && e.receiver != nil
}

// Notify records a notification sent to the peer ref at now under terms,
// which keeps a channel closed until digest later, and reports true. Expire
// reports it when it is done, and FailPeer when its peer disconnects first.
// If ref is not registered (the peer disconnected while the notification was
// sent) there is no channel to hold: Notify records nothing and reports
// false.
func (t *Table) Notify(ref peerpool.Ref, now, digest time.Duration, terms Terms) bool {
	if !t.registered(ref) {
		return false
	}
	h, e := t.slab.AllocArmed(now, digest)
	e.receiver, e.state, e.held = nil, stateDigesting, 0
	t.setTerms(h.Slot(), terms)
	t.link(e, h.Slot(), ref)
	if t.ids != nil {
		t.ids.forget(h.Slot())
	}
	return true
}

// Next reports the earliest deadline of any message. ok is false if there
// is none.
func (t *Table) Next() (deadline time.Duration, ok bool) { return t.slab.Next() }

// Sent records that the host accepted the request. If an event ended the
// request while it was being sent, Sent finishes it now and returns it.
func (t *Table) Sent(id peer.RequestID) (f Finished, ended bool) {
	h := t.handle(id)
	e := t.slab.Get(h)
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
		response = t.early[peer.RequestID(h)]
		delete(t.early, peer.RequestID(h))
	}
	return t.finish(h, e, reason, response), true
}

// Unsend forgets a request whose send failed and returns it (with Receiver
// nil: nothing is to be called). The caller reopens its channel.
func (t *Table) Unsend(id peer.RequestID) (f Finished, ok bool) {
	h := t.handle(id)
	e := t.slab.Get(h)
	if e == nil || e.state != stateSending {
		return Finished{}, false
	}
	delete(t.early, peer.RequestID(h))
	e.receiver = nil
	f = t.finish(h, e, 0, nil)
	e.lastEnd = unsent // e still points at the slot's record
	return f, true
}

// Respond matches a response from the peer named from to request id. It
// returns the finished request when the response ends it; ended is false with
// a nil error when the response was accepted but held back because the request
// is still being sent. Otherwise it returns the reason the response is
// dropped, changing nothing: ErrUnknownRequest, ErrWrongPeer,
// ErrDuplicateResponse, ErrLateResponse, or ErrWrongResponseType (the
// request expects another type: see Add; it stays live).
func (t *Table) Respond(id peer.RequestID, from peer.ID, response any) (f Finished, ended bool, err error) {
	return t.answer(id, from, heldResponse, response)
}

// Refuse matches a refusal from the peer named from of request id: the peer
// answered that it would not serve it. It is Respond in every other way: the
// same checks and errors, held back the same way while the request is being
// sent, and once it is accepted a later response or refusal is a duplicate.
// The finished request has Reason Refused.
func (t *Table) Refuse(id peer.RequestID, from peer.ID) (f Finished, ended bool, err error) {
	return t.answer(id, from, receiver.Refused, nil)
}

// answer is Respond (how is heldResponse) and Refuse (how is Refused).
func (t *Table) answer(id peer.RequestID, from peer.ID, how receiver.Reason, response any) (f Finished, ended bool, err error) {
	h := t.handle(id)
	e := t.slab.Get(h)
	if e == nil {
		if t.ids != nil {
			return Finished{}, false, t.strayInRange(id, h)
		}
		return Finished{}, false, t.stray(id)
	}
	// A request whose outcome is held back while it is sent has ended: it
	// answers duplicate or late whoever responds (its peer may even have
	// disconnected, and no longer be its owner).
	switch {
	case e.state == stateDigesting:
		return Finished{}, false, receiver.ErrUnknownRequest // a notification's slot: no ID was ever given out
	case e.held != 0:
		return Finished{}, false, strayResponseError(e.held)
	case t.peerID(e) != from:
		return Finished{}, false, receiver.ErrWrongPeer
	case how == heldResponse && t.expect != nil && !t.accepts(h.Slot(), response):
		return Finished{}, false, receiver.ErrWrongResponseType
	case e.state == stateSending:
		e.held = how
		if how == heldResponse {
			if t.early == nil {
				t.early = make(map[peer.RequestID]any)
			}
			t.early[peer.RequestID(h)] = response
		}
		return Finished{}, false, nil
	}
	if how == heldResponse {
		how = 0
	}
	return t.finish(h, e, how, response), true, nil
}

// stray says why a response to id, which names no outstanding message, is
// dropped: a slot remembers how its last two requests ended, and an ID
// older than that is late.
func (t *Table) stray(id peer.RequestID) error {
	e, gen, held := t.slab.Slot(slab.Handle(id))
	idGen := uint32(id >> 32)
	switch {
	case e == nil || idGen == 0:
		return receiver.ErrUnknownRequest
	case gen == idGen && !held:
		return strayResponseError(e.lastEnd) // its slot is free and remembers it
	case gen == idGen+1 && !held:
		return strayResponseError(e.held) // finish moved it there
	case gen == idGen+1:
		return strayResponseError(e.lastEnd) // the slot serves the next message
	case idGen < gen:
		// Its slot has gone to newer messages since it ended (the next one
		// takes the slot freed last, so that is at once): a response to it
		// is late, not a response to an unknown request.
		return receiver.ErrLateResponse
	}
	return receiver.ErrUnknownRequest
}

// strayInRange says why a response to id, an ID from the table's range that
// names no outstanding message, is dropped. h is the handle of its request
// if a slot still remembers it (0 if not): the slot is free, and remembers
// how that request ended. An ID no slot remembers is late if the cursor has
// issued it (its slot has served another message since), unknown if not.
func (t *Table) strayInRange(id peer.RequestID, h slab.Handle) error {
	if h != 0 {
		if e, _, _ := t.slab.Slot(h); e != nil {
			return strayResponseError(e.lastEnd)
		}
	}
	if t.ids.issued(id) {
		return receiver.ErrLateResponse
	}
	return receiver.ErrUnknownRequest
}

// Expire ends the messages whose deadlines are at or before now, one per
// call, earliest first, until it reports false: a pending request fails with
// Timeout, and a notification is done being digested (f.Notification). A
// request still being sent has its timeout held back until Sent, and is not
// reported. A request whose soft deadline (AddSoft) is due stays live,
// armed for its hard one; if it is pending and its receiver is a
// SlowReceiver, Expire reports it in slow (ok is true, f is zero and
// slow.ID is not), and if it is still being sent, SlowHeld reports it
// later.
func (t *Table) Expire(now time.Duration) (f Finished, slow Slow, ok bool) {
	for {
		h, e, due := t.slab.PopDue(now)
		if !due {
			return Finished{}, Slow{}, false
		}
		if t.soft != nil {
			if e.state == stateSending {
				if t.passSoft(h, softHeld) {
					continue
				}
			} else if t.passSoft(h, softPassed) {
				id := peer.RequestID(h)
				if t.ids != nil {
					id = t.ids.id(h)
				}
				if s, ok := t.slow(h, id, e); ok {
					return Finished{}, s, true
				}
				continue
			}
		}
		if e.state == stateSending {
			if e.held == 0 {
				e.held = receiver.Timeout
			}
			continue
		}
		return t.finish(h, e, receiver.Timeout, nil), Slow{}, true
	}
}

// FailPeer ends every request to the peer ref with reason Disconnected, and
// every notification it is digesting, appending them to dst (their channels
// go with the peer), and forgets the peer. Requests still being sent are
// held back as disconnected.
func (t *Table) FailPeer(ref peerpool.Ref, dst []Finished) []Finished {
	if !t.registered(ref) {
		return dst
	}
	slot := ref.Slot()
	for s := t.owners[slot].head; s >= 0; {
		t.visited++
		h, e := t.slab.At(s)
		next := e.next
		switch e.state {
		case stateSending:
			t.unlink(e)
			if e.held == 0 {
				e.held = receiver.Disconnected // a response that already came still wins
			}
			t.slab.Disarm(h)
		case stateDigesting:
			dst = append(dst, t.finish(h, e, 0, nil))
		default:
			dst = append(dst, t.finish(h, e, receiver.Disconnected, nil))
		}
		s = next
	}
	t.owners[slot] = owner{head: -1}
	return dst
}

// FailAll ends every outstanding request with reason Shutdown, and every
// notification, appending them to dst. Requests still being sent are held
// back as shut down, unless an earlier event already decided their outcome:
// as in FailPeer, a response that already came (and was accepted) still
// wins, and so does a timeout.
func (t *Table) FailAll(dst []Finished) []Finished {
	for h, e := range t.slab.All() {
		switch e.state {
		case stateSending:
			if e.held == 0 {
				e.held = receiver.Shutdown
			}
			t.slab.Disarm(h)
		default:
			dst = append(dst, t.finish(h, e, receiver.Shutdown, nil))
		}
	}
	return dst
}

// Withdraw takes the receiver away from request id: none of its methods will
// be called for it. The request stays outstanding, holding its channel, until
// its response or deadline comes. ok is false if the request is no longer
// outstanding or was already withdrawn.
func (t *Table) Withdraw(id peer.RequestID) bool {
	e := t.slab.Get(t.handle(id))
	if e == nil || e.state == stateDigesting || e.receiver == nil {
		return false
	}
	e.receiver = nil
	return true
}

// ReusedEarly returns how many request IDs of the table's range were issued
// to a peer before their quarantine for it had ended, the range being too
// small for the traffic (see SetIDRange); always 0 without a range.
func (t *Table) ReusedEarly() uint64 {
	if t.ids == nil {
		return 0
	}
	return t.ids.reusedEarly
}

// Visited returns how many messages FailPeer has looked at so far: the work
// disconnects have cost, which must track the disconnected peers' own
// messages and not the table's size.
func (t *Table) Visited() int { return t.visited }

// Len returns the number of outstanding requests, withdrawn ones included.
func (t *Table) Len() int { return t.n }

// finish ends the message in h's slot, whose record is e, and frees the slot.
func (t *Table) finish(h slab.Handle, e *entry, reason receiver.Reason, response any) Finished {
	f := Finished{
		Receiver: e.receiver,
		Peer:     t.peerRef(e),
		PeerID:   t.peerID(e),
		Reason:   reason,
		Response: response,
	}
	if slot := int(h.Slot()); slot < len(t.terms) {
		f.Terms = t.terms[slot]
	}
	end := reason
	if e.state == stateDigesting {
		f.Reason, f.Notification, end = 0, true, unsent
	} else {
		f.ID = peer.RequestID(h)
		if t.ids != nil {
			f.ID = t.ids.id(h)
		}
		t.n--
		if end == 0 {
			end = heldResponse
		}
	}
	if e.linked {
		t.unlink(e)
	}
	rearmed := false // for the hard deadline, after the soft one: see softState
	if st := t.softOf(h.Slot()); st != nil && st.phase != noSoft {
		rearmed = st.phase != softArmed
		st.phase = noSoft
	}
	// Field by field for the reason given in Add.
	e.receiver, e.state, e.held, e.lastEnd = nil, stateFree, e.lastEnd, end // held: how the request before ended
	f.SentAt, _ = t.slab.Free(h)
	if rearmed {
		f.SentAt -= t.soft[h.Slot()].soft
	}
	return f
}

// setTerms records the terms of the message in slot. The slice beside the
// slab is made only when a message first has terms; until then, every
// message's terms are zero.
func (t *Table) setTerms(slot int32, terms Terms) {
	if terms == (Terms{}) && t.terms == nil {
		return
	}
	if n := int(slot) + 1 - len(t.terms); n > 0 {
		t.terms = append(t.terms, make([]Terms, n)...)
	}
	t.terms[slot] = terms
}

// registered reports whether ref names the peer registered in its slot.
func (t *Table) registered(ref peerpool.Ref) bool {
	slot := ref.Slot()
	return ref != (peerpool.Ref{}) && slot < len(t.owners) && t.owners[slot].ref == ref
}

func (t *Table) peerID(e *entry) peer.ID {
	if !e.linked {
		return ""
	}
	return t.owners[e.peer].id
}

func (t *Table) peerRef(e *entry) peerpool.Ref {
	if !e.linked {
		return peerpool.Ref{}
	}
	return t.owners[e.peer].ref
}

// link puts e, the record in slot, at the head of the list of ref's peer.
func (t *Table) link(e *entry, slot int32, ref peerpool.Ref) {
	e.peer = int32(ref.Slot())
	o := &t.owners[e.peer]
	e.prev, e.next = -1, o.head
	if o.head >= 0 {
		_, head := t.slab.At(o.head)
		head.prev = slot
	}
	o.head = slot
	e.linked = true
}

// unlink takes e out of its peer's list.
func (t *Table) unlink(e *entry) {
	if e.prev >= 0 {
		_, p := t.slab.At(e.prev)
		p.next = e.next
	} else {
		t.owners[e.peer].head = e.next
	}
	if e.next >= 0 {
		_, n := t.slab.At(e.next)
		n.prev = e.prev
	}
	e.prev, e.next, e.linked = -1, -1, false
}

// strayResponseError says why a response to a request that ended as end is
// dropped. A request the peer answered or refused has had its answer: a
// second one is a duplicate.
func strayResponseError(end receiver.Reason) error {
	switch end {
	case heldResponse, receiver.Refused:
		return receiver.ErrDuplicateResponse
	case unsent, 0:
		return receiver.ErrUnknownRequest
	}
	return receiver.ErrLateResponse
}

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
// them, take 4 bytes more per slot, in a slice beside; expected response
// types, once any request has one, 16 more; soft deadlines (AddSoft), 24
// more.
//
// The table hands out request IDs and decides, for each event that can end
// a request (a response, a refusal, its deadline, its peer's disconnect, a
// shutdown, a failed send), whether the event ends it and how. It never calls a receiver:
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

const (
	noSoft     softPhase = iota // no soft deadline, or the request ended
	softArmed                   // the slot's deadline is the soft one
	softPassed                  // the soft deadline passed; armed for the hard one
	softHeld                    // it passed while the request was being sent: reported by SlowHeld
)

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

// Answered reports whether the request ended with a response. It is true
// as well for the record Unsend returns, which had none.
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
	var f Finished
	t.finishInto(h, e, reason, response, &f)
	return f
}

// finishInto is finish, writing the finished message into *f, every field
// of it, one by one: a composite literal stored through the pointer was
// built aside and copied over.
func (t *Table) finishInto(h slab.Handle, e *entry, reason receiver.Reason, response any, f *Finished) {
	f.ID, f.Receiver, f.Peer, f.PeerID = 0, e.receiver, t.peerRef(e), t.peerID(e)
	f.Response, f.Reason, f.Notification = response, reason, false
	f.Terms = Terms{}
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

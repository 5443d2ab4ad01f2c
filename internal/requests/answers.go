package requests

import (
	"reflect"

	"github.com/peersched/peersched/internal/slab"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

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

// Respond matches a response from the peer named from to request id. It
// returns the finished request when the response ends it; ended is false with
// a nil error when the response was accepted but held back because the request
// is still being sent. Otherwise it returns the reason the response is
// dropped, changing nothing: ErrUnknownRequest, ErrWrongPeer,
// ErrDuplicateResponse, ErrLateResponse, or ErrWrongResponseType (the
// request expects another type: see Add; it stays live).
func (t *Table) Respond(id peer.RequestID, from peer.ID, response any) (f Finished, ended bool, err error) {
	ended, err = t.Answer(id, from, response, false, &f)
	return f, ended, err
}

// Refuse matches a refusal from the peer named from of request id: the peer
// answered that it would not serve it. It is Respond in every other way: the
// same checks and errors, held back the same way while the request is being
// sent, and once it is accepted a later response or refusal is a duplicate.
// The finished request has Reason Refused.
func (t *Table) Refuse(id peer.RequestID, from peer.ID) (f Finished, ended bool, err error) {
	ended, err = t.Answer(id, from, nil, true, &f)
	return f, ended, err
}

// Answer is Respond, or Refuse if refused is set, writing the finished
// request into *f when the answer ends it (and leaving *f alone
// otherwise) instead of returning it. It is the scheduler's hot path: a
// record of 80 bytes returned through two calls cost a copy at each.
func (t *Table) Answer(id peer.RequestID, from peer.ID, response any, refused bool, f *Finished) (ended bool, err error) {
	if refused {
		return t.answer(id, from, receiver.Refused, nil, f)
	}
	return t.answer(id, from, heldResponse, response, f)
}

// answer is Respond (how is heldResponse) and Refuse (how is Refused),
// writing the finished request into *f.
func (t *Table) answer(id peer.RequestID, from peer.ID, how receiver.Reason, response any, f *Finished) (ended bool, err error) {
	h := t.handle(id)
	e := t.slab.Get(h)
	if e == nil {
		if t.ids != nil {
			return false, t.strayInRange(id, h)
		}
		return false, t.stray(id)
	}
	// A request whose outcome is held back while it is sent has ended: it
	// answers duplicate or late whoever responds (its peer may even have
	// disconnected, and no longer be its owner).
	switch {
	case e.state == stateDigesting:
		return false, receiver.ErrUnknownRequest // a notification's slot: no ID was ever given out
	case e.held != 0:
		return false, strayResponseError(e.held)
	case t.peerID(e) != from:
		return false, receiver.ErrWrongPeer
	case how == heldResponse && t.expect != nil && !t.accepts(h.Slot(), response):
		return false, receiver.ErrWrongResponseType
	case e.state == stateSending:
		e.held = how
		if how == heldResponse {
			if t.early == nil {
				t.early = make(map[peer.RequestID]any)
			}
			t.early[peer.RequestID(h)] = response
		}
		return false, nil
	}
	if how == heldResponse {
		how = 0
	}
	t.finishInto(h, e, how, response, f)
	return true, nil
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

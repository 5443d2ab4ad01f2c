package requests

import (
	"reflect"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/slab"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// softState is the second deadline of a request sent with a soft one. Its
// slot is armed first for the soft deadline, then, once that passes, for the
// hard one, as if armed at the instant the soft one was due: the slab's arm
// time is then the send time plus soft.
type softState struct {
	soft, hard time.Duration // after the send
	phase      softPhase
}

type softPhase uint8

// Slow names a request whose soft deadline has passed, still live, and the
// receiver to tell.
type Slow struct {
	ID       peer.RequestID
	Receiver receiver.SlowReceiver
	PeerID   peer.ID
	handle   slab.Handle // the request's slot and generation: see StillLive
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

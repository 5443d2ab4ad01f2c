package requests

import (
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

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
// held back as disconnected, unless an earlier response, refusal or
// timeout already decided their outcome.
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
// its response, refusal or deadline, its peer's disconnect or a shutdown. ok is false if the request is no longer
// outstanding or was already withdrawn.
func (t *Table) Withdraw(id peer.RequestID) bool {
	e := t.slab.Get(t.handle(id))
	if e == nil || e.state == stateDigesting || e.receiver == nil {
		return false
	}
	e.receiver = nil
	return true
}

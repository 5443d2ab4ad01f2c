package bench

import (
	"errors"
	"sync"
	"time"

	"github.com/peersched/peersched/internal/slab"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// floor is the least work a request's life needs: an ID from a slab whose
// slot also holds the request's deadline (the scheduler's own structure,
// slab.Slab), a check that the response comes from the peer asked and
// before its deadline, and one call of the receiver, all under one mutex. It
// has no offers, no sender queue, no per-peer channel accounting, and no
// callback queue.
//
// Like the scheduler it reads the clock twice per request: once to set the
// deadline, and once when the response comes, to fail whatever is due
// before accepting it (promise 8: a response is accepted only before its
// deadline, whether or not a timer has fired yet).
type floor struct {
	peers   []*hostPeer
	out     *fifo
	epoch   time.Time
	timeout time.Duration
	rcv     countingReceiver

	mu    sync.Mutex
	slots slab.Slab[floorSlot] // guarded by mu
}

type floorSlot struct {
	receiver receiver.Receiver
	peer     int32
}

var errFloorUnknown = errors.New("floor: unknown request or wrong peer")

func newFloor(peers int, out *fifo) *floor {
	f := &floor{out: out, epoch: time.Now(), timeout: longTimeout}
	f.peers = makePeers(peers, "floor-", out)
	return f
}

// send sends one request to p, with f's receiver.
func (f *floor) send(p *hostPeer) error {
	now := time.Since(f.epoch)
	f.mu.Lock()
	h, s := f.slots.AllocArmed(now, f.timeout)
	s.receiver, s.peer = &f.rcv, p.index
	f.mu.Unlock()
	return p.Send(peer.RequestID(h), message)
}

// deliver hands the response to request id from peer index from, after
// failing every request whose deadline has passed.
func (f *floor) deliver(from int32, id uint64, resp any) error {
	now := time.Since(f.epoch)
	f.mu.Lock()
	for {
		h, s, ok := f.slots.PopDue(now)
		if !ok {
			break
		}
		f.expireLocked(h, s)
	}
	h := slab.Handle(id)
	s := f.slots.Get(h)
	if s == nil || s.peer != from {
		f.mu.Unlock()
		return errFloorUnknown
	}
	r := s.receiver
	f.slots.Free(h)
	f.mu.Unlock()
	r.OnResponse(peer.RequestID(id), f.peers[from].id, resp)
	return nil
}

// expireLocked fails request h, whose deadline has fired. The caller holds
// mu; the receiver is called with it held, which only the floor may do: it
// has no callbacks that could call back into it.
func (f *floor) expireLocked(h slab.Handle, s *floorSlot) {
	r, from := s.receiver, s.peer
	f.slots.Free(h)
	r.OnFailure(peer.RequestID(h), f.peers[from].id, receiver.Timeout)
}

func (f *floor) fill(n int) error {
	for i := range n {
		if err := f.send(f.peers[i%len(f.peers)]); err != nil {
			return err
		}
	}
	return nil
}

func (f *floor) step() error {
	o, ok := f.out.pop()
	if !ok {
		return errFIFOEmpty
	}
	if err := f.deliver(o.peer, o.id, response); err != nil {
		return err
	}
	return f.send(f.peers[o.peer])
}

func (f *floor) answered() uint64 { return f.rcv.responses.Load() }

func (f *floor) outstanding() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.slots.Used()
}

func (f *floor) waitOutstanding() { f.out.waitNonEmpty() }

// caughtUp returns at once: each step sends its replacement before it
// returns.
func (f *floor) caughtUp() {}

func (f *floor) trailing() int { return 0 }

func (f *floor) close() {}

func (f *floor) err() error { return nil }

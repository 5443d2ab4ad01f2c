package bench

import (
	"errors"
	"sync"
	"time"

	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/timeouts"
)

// floor is the least work a request's life needs: an ID from a slab, a
// deadline in the same deadline structure the scheduler uses, a check that
// the response comes from the peer asked and before its deadline, and one
// call of the receiver, all under one mutex. It has no offers, no sender
// queue, no per-peer channel accounting, and no callback queue.
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

	mu sync.Mutex
	// The following fields are guarded by mu.
	slots     []floorSlot
	free      []int32
	deadlines timeouts.Queue
}

type floorSlot struct {
	receiver   receiver.Receiver // nil while free
	deadline   timeouts.Handle
	generation uint32
	peer       int32
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
	var slot int32
	if n := len(f.free); n > 0 {
		slot = f.free[n-1]
		f.free = f.free[:n-1]
	} else {
		slot = int32(len(f.slots))
		f.slots = append(f.slots, floorSlot{})
	}
	s := &f.slots[slot]
	s.generation++
	if s.generation == 0 {
		s.generation = 1
	}
	id := uint64(s.generation)<<32 | uint64(slot+1)
	s.receiver = &f.rcv
	s.peer = p.index
	s.deadline = f.deadlines.Add(now, f.timeout, id)
	f.mu.Unlock()
	return p.Send(id, message)
}

// deliver hands the response to request id from peer index from, after
// failing every request whose deadline has passed.
func (f *floor) deliver(from int32, id uint64, resp any) error {
	now := time.Since(f.epoch)
	f.mu.Lock()
	for {
		due, ok := f.deadlines.PopDue(now)
		if !ok {
			break
		}
		f.expireLocked(due)
	}
	slot := int64(uint32(id)) - 1
	if slot < 0 || slot >= int64(len(f.slots)) {
		f.mu.Unlock()
		return errFloorUnknown
	}
	s := &f.slots[slot]
	if s.receiver == nil || s.generation != uint32(id>>32) || s.peer != from {
		f.mu.Unlock()
		return errFloorUnknown
	}
	r := s.receiver
	f.deadlines.Remove(s.deadline)
	s.receiver, s.deadline = nil, 0
	f.free = append(f.free, int32(slot))
	f.mu.Unlock()
	r.OnResponse(receiver.RequestID(id), f.peers[from].id, resp)
	return nil
}

// expireLocked fails request id, whose deadline has fired. The caller holds
// mu; the receiver is called with it held, which only the floor may do: it
// has no callbacks that could call back into it.
func (f *floor) expireLocked(id uint64) {
	slot := int32(uint32(id)) - 1
	s := &f.slots[slot]
	r := s.receiver
	s.receiver, s.deadline = nil, 0
	f.free = append(f.free, slot)
	r.OnFailure(receiver.RequestID(id), f.peers[s.peer].id, receiver.Timeout)
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
	return f.deadlines.Len()
}

func (f *floor) close() {}

func (f *floor) err() error { return nil }

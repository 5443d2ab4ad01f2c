package bench

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peersched/peersched/peer"
)

// naive is what a Go developer writes by hand to send requests to peers and
// route the responses back: a mutex, a map from ID to request, a runtime
// timer per request (time.AfterFunc, stopped when the response comes), a
// completion callback, and per-peer counts of requests in flight to cap each
// peer's load.
type naive struct {
	peers   []*hostPeer
	out     *fifo
	timeout time.Duration
	limit   int // requests in flight per peer
	done    func(id uint64, from peer.ID, response any, err error)
	// resend makes the completion callback of a response send the next
	// request to the same peer, as BenchmarkPipelined's receivers do.
	resend bool
	byID   map[peer.ID]*hostPeer

	responses, timeouts atomic.Uint64

	errMu    sync.Mutex
	firstErr error // the first error a completion callback saw; guarded by errMu

	mu sync.Mutex
	// The following fields are guarded by mu.
	nextID   uint64
	pending  map[uint64]*naiveRequest
	inFlight map[peer.ID]int
}

type naiveRequest struct {
	peer  peer.ID
	timer *time.Timer
	done  func(id uint64, from peer.ID, response any, err error)
}

var (
	errNaiveBusy    = errors.New("naive: peer has no capacity left")
	errNaiveUnknown = errors.New("naive: unknown request or wrong peer")
	errNaiveTimeout = errors.New("naive: timeout")
)

func newNaive(peers, perPeer int, out *fifo) *naive {
	n := &naive{
		out:      out,
		timeout:  longTimeout,
		limit:    perPeer,
		pending:  make(map[uint64]*naiveRequest),
		inFlight: make(map[peer.ID]int),
	}
	n.peers = makePeers(peers, "naive-", out)
	n.byID = make(map[peer.ID]*hostPeer, len(n.peers))
	for _, p := range n.peers {
		n.byID[p.id] = p
	}
	n.done = n.complete
	return n
}

// complete is the completion callback every request is sent with.
func (n *naive) complete(_ uint64, from peer.ID, _ any, err error) {
	if err != nil {
		n.timeouts.Add(1)
		return
	}
	n.responses.Add(1)
	if n.resend {
		if err := n.send(n.byID[from]); err != nil {
			n.fail(err)
		}
	}
}

func (n *naive) send(p *hostPeer) error {
	n.mu.Lock()
	if n.inFlight[p.id] >= n.limit {
		n.mu.Unlock()
		return errNaiveBusy
	}
	n.nextID++
	id := n.nextID
	r := &naiveRequest{peer: p.id, done: n.done}
	r.timer = time.AfterFunc(n.timeout, func() { n.expire(id) })
	n.pending[id] = r
	n.inFlight[p.id]++
	n.mu.Unlock()
	if err := p.Send(peer.RequestID(id), message); err != nil {
		n.mu.Lock()
		if n.pending[id] == r {
			r.timer.Stop()
			delete(n.pending, id)
			n.inFlight[p.id]--
		}
		n.mu.Unlock()
		return err
	}
	return nil
}

func (n *naive) deliver(from peer.ID, id uint64, resp any) error {
	n.mu.Lock()
	r, ok := n.pending[id]
	if !ok || r.peer != from {
		n.mu.Unlock()
		return errNaiveUnknown
	}
	r.timer.Stop()
	delete(n.pending, id)
	n.inFlight[from]--
	n.mu.Unlock()
	r.done(id, from, resp, nil)
	return nil
}

func (n *naive) expire(id uint64) {
	n.mu.Lock()
	r, ok := n.pending[id]
	if !ok {
		n.mu.Unlock()
		return
	}
	delete(n.pending, id)
	n.inFlight[r.peer]--
	n.mu.Unlock()
	r.done(id, r.peer, nil, errNaiveTimeout)
}

func (n *naive) fill(count int) error {
	for i := range count {
		if err := n.send(n.peers[i%len(n.peers)]); err != nil {
			return err
		}
	}
	return nil
}

func (n *naive) step() error {
	o, ok := n.out.pop()
	if !ok {
		return errFIFOEmpty
	}
	p := n.peers[o.peer]
	if err := n.deliver(p.id, o.id, response); err != nil {
		return err
	}
	return n.send(p)
}

func (n *naive) answered() uint64 { return n.responses.Load() }

func (n *naive) outstanding() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.pending)
}

func (n *naive) waitOutstanding() { n.out.waitNonEmpty() }

// caughtUp returns at once: each step sends its replacement before it
// returns.
func (n *naive) caughtUp() {}

func (n *naive) trailing() int { return 0 }

// close stops every timer, so a million of them do not linger for an hour.
func (n *naive) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	for id, r := range n.pending {
		r.timer.Stop()
		delete(n.pending, id)
	}
}

func (n *naive) fail(err error) {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	if n.firstErr == nil {
		n.firstErr = err
	}
}

func (n *naive) err() error {
	n.errMu.Lock()
	defer n.errMu.Unlock()
	return n.firstErr
}

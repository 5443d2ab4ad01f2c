package tcpnet

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// testLedger is small and shared: it is immutable.
var testLedger = func() *ledger.Ledger {
	l, err := ledger.Generate(3, 500)
	if err != nil {
		panic(err)
	}
	return l
}()

// bound is how long any TCP test may wait for something that should happen
// at once on loopback: generous, so a loaded machine does not fail it, but
// bounded, so a bug fails instead of hanging.
const bound = 20 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	return ctx
}

// delivery is one response a fakeHost was handed.
type delivery struct {
	from peer.ID
	id   peer.RequestID
	msg  any
}

// fakeHost records what a transport hands it.
type fakeHost struct {
	mu          sync.Mutex
	connected   map[peer.ID]peer.Peer
	connects    int
	connectCh   chan peer.ID
	delivered   chan delivery
	disconnects chan peer.ID
}

func newFakeHost() *fakeHost {
	return &fakeHost{
		connected:   map[peer.ID]peer.Peer{},
		connectCh:   make(chan peer.ID, 64),
		delivered:   make(chan delivery, 1024),
		disconnects: make(chan peer.ID, 64),
	}
}

func (h *fakeHost) Connect(p peer.Peer, _ int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.connected[p.ID()] = p
	h.connects++
	h.connectCh <- p.ID()
	return nil
}

func (h *fakeHost) Disconnect(id peer.ID) error {
	h.mu.Lock()
	delete(h.connected, id)
	h.mu.Unlock()
	h.disconnects <- id
	return nil
}

func (h *fakeHost) Deliver(from peer.ID, id peer.RequestID, msg any) error {
	h.delivered <- delivery{from, id, msg}
	return nil
}

func (h *fakeHost) peer(id peer.ID) peer.Peer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.connected[id]
}

// recv waits for a value from ch, failing t after the bound.
func recv[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
		panic("unreachable")
	}
}

// rawPeer is the far end of a Conn under test: a TCP socket the test reads
// and writes raw bytes on.
type rawPeer struct {
	conn *Conn
	far  net.Conn
}

// dialRaw returns a started Conn to a fresh loopback socket, connected to
// host as peer "raw", and the socket's far end.
func dialRaw(t *testing.T, host *fakeHost, cfg ConnConfig) rawPeer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	far, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	c := NewConn(nc, "raw", host, cfg)
	if err := host.Connect(c, 1); err != nil {
		t.Fatal(err)
	}
	c.Start()
	t.Cleanup(func() {
		_ = c.Close()
		_ = far.Close()
	})
	return rawPeer{c, far}
}

// elapse lets d pass on the clock of the synctest bubble the caller runs
// in. Inside a bubble time is virtual: a goroutine that waits for it is
// durably blocked, and the bubble's clock jumps to the next instant
// something is due, so nothing here waits in real time. The tests that
// call it all run in synctest.Test; the servers and connections under test
// read the same bubble clock (time.Now and their deadlines), which is what
// the injected clock is elsewhere. It waits on a timer of the bubble's
// own, which a receive blocks on durably, the same as a sleep there.
func elapse(d time.Duration) { <-time.After(d) }

package tcpnet

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/wire"
)

func newServer(t *testing.T, b Behaviour) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{Ledger: testLedger, Behaviour: b, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestClientAndServer: a Client connects to a Server, requests go through
// the Conn the host was given, and honest answers come back.
func TestClientAndServer(t *testing.T) {
	ctx := testContext(t)
	s := newServer(t, Behaviour{Latency: simnet.Fixed(time.Millisecond)})
	host := newFakeHost()
	c := NewClient(host, ClientConfig{Channels: 2})
	defer c.Close()
	c.Add("s", s.Addr())
	recv(t, ctx, host.connectCh, "the connection")
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	for id := uint64(1); id <= 3; id++ {
		if err := host.peer("s").Send(peer.RequestID(id), req); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		d := recv(t, ctx, host.delivered, "a response")
		resp := d.msg.(ledger.Objects)
		if d.from != "s" || d.id < 1 || d.id > 3 || !ledger.Verify(req.Hashes[0], resp.Items[0].Data) {
			t.Fatalf("delivered %+v", d)
		}
	}
	c.Close()
	recv(t, ctx, host.disconnects, "the disconnect at Close")
	if c.Dials() != 1 {
		t.Fatalf("%d dials", c.Dials())
	}
}

// TestServerRefusesBadFrames: a bad frame closes the connection on the
// server's side too. (Frames of unknown types, replies and pongs do not: see
// TestServerSkipsAndCharges.)
func TestServerRefusesBadFrames(t *testing.T) {
	for _, c := range []struct {
		name  string
		frame []byte
	}{
		{"oversized", binary.BigEndian.AppendUint32(nil, 1<<25)},
		{"malformed", append(binary.BigEndian.AppendUint32(nil, 1), 0, 42, 0xff)},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newServer(t, Behaviour{})
			nc, err := net.Dial("tcp", s.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if err := nc.SetDeadline(time.Now().Add(bound)); err != nil {
				t.Fatal(err)
			}
			if _, err := nc.Write(c.frame); err != nil {
				t.Fatal(err)
			}
			_, err = nc.Read(make([]byte, 1))
			var ne net.Error
			if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
				t.Fatalf("read after a bad frame: %v, want the connection closed", err)
			}
			s.Close() // waits for the connection's goroutines, so the count is final
			if st := s.Stats(); st.Refused != 1 || st.Requests != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

func mustFrame(t *testing.T, id uint64, msg any) []byte {
	t.Helper()
	b, err := wire.AppendMessage(nil, id, msg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestServerPing: a Ping gets a Pong with the same ID.
func TestServerPing(t *testing.T) {
	s := newServer(t, Behaviour{})
	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(bound)); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(mustFrame(t, 12, wire.Ping{})); err != nil {
		t.Fatal(err)
	}
	f, err := wire.ReadFrame(bufio.NewReader(nc), 0)
	if err != nil {
		t.Fatal(err)
	}
	if id, msg, err := wire.DecodeMessage(f, 0); err != nil || id != 12 || msg != (wire.Pong{}) {
		t.Fatalf("%d %v, %v", id, msg, err)
	}
}

// TestKillAndRestart: killing a server ends its clients' connections (each
// disconnecting its peer); after a restart on the same address the client
// dials again and the host gets the peer back.
func TestKillAndRestart(t *testing.T) {
	ctx := testContext(t)
	s := newServer(t, Behaviour{})
	host := newFakeHost()
	c := NewClient(host, ClientConfig{RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond})
	defer c.Close()
	c.Add("s", s.Addr())
	recv(t, ctx, host.connectCh, "the first connection")
	s.Kill()
	recv(t, ctx, host.disconnects, "the disconnect")
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	recv(t, ctx, host.connectCh, "the second connection")
	c.Close() // waits for the client's goroutines: Dials is final
	if c.Dials() != 2 {
		t.Fatalf("%d dials", c.Dials())
	}
}

// TestRemove: a removed peer's connection closes (the host is told) and
// the client does not dial it again, while it keeps its other peers.
func TestRemove(t *testing.T) {
	ctx := testContext(t)
	s := newServer(t, Behaviour{})
	host := newFakeHost()
	c := NewClient(host, ClientConfig{RedialMin: time.Millisecond, RedialMax: time.Millisecond})
	defer c.Close()
	c.Add("s", s.Addr())
	recv(t, ctx, host.connectCh, "the connection")
	c.Remove("s")
	recv(t, ctx, host.disconnects, "the disconnect")
	c.Remove("s")     // again: nothing
	c.Remove("never") // never added: nothing
	// Another peer on the same server connects; "s", had it been kept,
	// would have redialled within a millisecond of its disconnect.
	c.Add("u", s.Addr())
	recv(t, ctx, host.connectCh, "the other peer's connection")
	c.Close()
	if c.Dials() != 2 {
		t.Fatalf("%d dials, want 2: the removed peer was dialled again", c.Dials())
	}
}

// dropperAndClient starts a server that behaves as b and a client of it
// that redials within milliseconds, and returns once the client is
// connected.
func dropperAndClient(t *testing.T, ctx context.Context, b Behaviour) (*Server, *fakeHost) {
	t.Helper()
	s := newServer(t, b)
	host := newFakeHost()
	c := NewClient(host, ClientConfig{RedialMin: time.Millisecond, RedialMax: 5 * time.Millisecond})
	t.Cleanup(c.Close)
	c.Add("s", s.Addr())
	recv(t, ctx, host.connectCh, "the first connection")
	return s, host
}

// TestDropAfter: a server told to drop after n requests does, and comes back
// by itself after DownFor.
func TestDropAfter(t *testing.T) {
	ctx := testContext(t)
	s, host := dropperAndClient(t, ctx, Behaviour{DropAfter: 3, DownFor: 10 * time.Millisecond})
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	for id := uint64(1); id <= 3; id++ {
		if err := host.peer("s").Send(peer.RequestID(id), req); err != nil {
			t.Fatal(err)
		}
	}
	recv(t, ctx, host.disconnects, "the drop")
	recv(t, ctx, host.connectCh, "the comeback")
	if st := s.Stats(); st.Drops != 1 || st.Requests != 3 {
		t.Fatalf("stats %+v", st)
	}
}

// TestDropAfterObjects: a server told to drop after n objects asked for
// drops after the request that takes the count past n (whatever the
// requests' sizes), comes back after DownFor, and drops again at 2n.
func TestDropAfterObjects(t *testing.T) {
	ctx := testContext(t)
	s, host := dropperAndClient(t, ctx, Behaviour{DropAfterObjects: 10, DownFor: 10 * time.Millisecond})
	ask := func(id uint64, objects int) {
		t.Helper()
		hashes := make([]ledger.Hash, objects)
		for i := range hashes {
			hashes[i] = testLedger.Root()
		}
		if err := host.peer("s").Send(peer.RequestID(id), ledger.GetObjects{Hashes: hashes}); err != nil {
			t.Fatal(err)
		}
	}
	ask(1, 4)
	ask(2, 5) // 9: not yet
	ask(3, 3) // 12: past 10
	recv(t, ctx, host.disconnects, "the drop")
	recv(t, ctx, host.connectCh, "the comeback")
	if st := s.Stats(); st.Drops != 1 || st.Requests != 3 || st.Asked != 12 {
		t.Fatalf("stats %+v, want 1 drop after 3 requests of 12 objects", st)
	}
	ask(4, 8) // 20: at 2n
	recv(t, ctx, host.disconnects, "the second drop")
	if st := s.Stats(); st.Drops != 2 || st.Asked != 20 {
		t.Fatalf("stats %+v, want a second drop at 20 objects", st)
	}
}

func TestServerErrors(t *testing.T) {
	if _, err := NewServer(ServerConfig{}); err == nil {
		t.Error("a server without a ledger")
	}
	if _, err := NewServer(ServerConfig{Ledger: testLedger, Behaviour: Behaviour{Loss: 2}}); !errors.Is(err, simnet.ErrBadProfile) {
		t.Errorf("loss 2: %v", err)
	}
	s := newServer(t, Behaviour{})
	if err := s.Listen("127.0.0.1:0"); !errors.Is(err, ErrListening) {
		t.Errorf("second Listen: %v", err)
	}
	s.Close()
	if err := s.Restart(); !errors.Is(err, ErrServerClosed) {
		t.Errorf("Restart after Close: %v", err)
	}
}

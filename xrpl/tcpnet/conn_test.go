package tcpnet

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// TestBadFramesCloseAndDisconnect: a malformed or oversized frame
// from the peer closes the connection and disconnects the peer from the
// host, once, with an error that says which, and names the reason.
func TestBadFramesCloseAndDisconnect(t *testing.T) {
	header := func(sizeWord uint32, typ uint16) []byte {
		b := binary.BigEndian.AppendUint32(nil, sizeWord)
		return binary.BigEndian.AppendUint16(b, typ)
	}
	getObjects := func(payload []byte) []byte {
		return append(header(uint32(len(payload)), uint16(wire.TypeGetObjects)), payload...)
	}
	// A reply of 100 empty objects: type, query, then 100 times field 6.
	many := []byte{0x08, 0x04, 0x10, 0x00}
	for range 100 {
		many = append(many, 0x32, 0x00)
	}
	for _, c := range []struct {
		name   string
		bytes  []byte
		want   error
		reason Reason
	}{
		{"compressed", header(0x90000004, uint16(wire.TypeGetObjects)), wire.ErrMalformed, ReasonMalformed},
		{"size above the cap", header(1<<20, uint16(wire.TypeGetObjects)), wire.ErrOversized, ReasonOversized},
		{"payload that does not parse", getObjects([]byte{0xff, 1, 2, 3}), wire.ErrMalformed, ReasonMalformed},
		{"required fields missing", getObjects([]byte{0x18, 0x07}), wire.ErrMalformed, ReasonMalformed},
		{"ping that does not parse", append(header(1, uint16(wire.TypePing)), 0x0a), wire.ErrMalformed, ReasonMalformed},
		{"too many objects", getObjects(many), wire.ErrOversized, ReasonTooManyItems},
		{"stream cut inside a frame", header(10, uint16(wire.TypeGetObjects))[:5], io.ErrUnexpectedEOF, ReasonCutMidFrame},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := testContext(t)
			host := newFakeHost()
			p := dialRaw(t, host, ConnConfig{MaxFrame: 64 << 10, MaxItems: 10})
			if _, err := p.far.Write(c.bytes); err != nil {
				t.Fatal(err)
			}
			if c.want == io.ErrUnexpectedEOF {
				_ = p.far.Close()
			}
			if id := recv(t, ctx, host.disconnects, "the disconnect"); id != "raw" {
				t.Fatalf("disconnected %q", id)
			}
			recv(t, ctx, p.conn.Done(), "the end of the connection")
			if err := p.conn.Err(); !errors.Is(err, c.want) || ReasonOf(err) != c.reason {
				t.Fatalf("connection ended with %v (reason %q), want %v (%q)", err, ReasonOf(err), c.want, c.reason)
			}
			if err := p.conn.Send(1, ledger.GetObjects{}); !errors.Is(err, ErrClosed) {
				t.Fatalf("Send after the end: %v", err)
			}
			// The far end sees the connection closed.
			if _, err := p.far.Read(make([]byte, 1)); err == nil {
				t.Fatal("far end can still read")
			}
			if len(host.disconnects) != 0 || len(host.delivered) != 0 {
				t.Fatalf("%d more disconnects, %d deliveries", len(host.disconnects), len(host.delivered))
			}
		})
	}
}

// TestConnRoundTrip: requests go out as frames, responses and anything
// else under a request ID come back through Deliver, and a Ping is answered
// without troubling the host.
func TestConnRoundTrip(t *testing.T) {
	ctx := testContext(t)
	host := newFakeHost()
	p := dialRaw(t, host, ConnConfig{})
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	if err := p.conn.Send(42, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(p.far)
	f, err := wire.ReadFrame(br, 0)
	if err != nil || f.Type != wire.TypeGetObjects {
		t.Fatalf("far end read %v, %v", f, err)
	}
	if id, msg, err := wire.DecodeMessage(f, 0); err != nil || id != 42 {
		t.Fatalf("far end decoded %d %+v, %v", id, msg, err)
	}
	for _, m := range []struct {
		id  uint64
		msg any
	}{{9, wire.Ping{}}, {42, testLedger.Answer(req)}, {43, req}} {
		b, err := wire.AppendMessage(nil, m.id, m.msg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.far.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	f, err = wire.ReadFrame(br, 0)
	if err != nil || f.Type != wire.TypePing {
		t.Fatalf("pong frame: %v, %v", f, err)
	}
	if id, msg, err := wire.DecodeMessage(f, 0); err != nil || id != 9 || msg != (wire.Pong{}) {
		t.Fatalf("pong: %d %v, %v", id, msg, err)
	}
	d := recv(t, ctx, host.delivered, "the response")
	resp, ok := d.msg.(ledger.Objects)
	if d.from != "raw" || d.id != 42 || !ok || len(resp.Items) != 1 || !ledger.Verify(testLedger.Root(), resp.Items[0].Data) {
		t.Fatalf("delivered %+v", d)
	}
	if d := recv(t, ctx, host.delivered, "the wrong-type response"); d.id != 43 {
		t.Fatalf("delivered %+v", d)
	}
	if err := p.conn.Send(1, "not a message"); !errors.Is(err, wire.ErrUnknownType) {
		t.Fatalf("Send of a string: %v", err)
	}
	if err := p.conn.Send(1<<32, req); !errors.Is(err, wire.ErrIDRange) {
		t.Fatalf("Send under a 33-bit ID: %v", err)
	}
	_ = p.conn.Close()
	if id := recv(t, ctx, host.disconnects, "the disconnect"); id != "raw" {
		t.Fatalf("disconnected %q", id)
	}
	if err := p.conn.Err(); !errors.Is(err, ErrClosed) || ReasonOf(err) != ReasonClosed {
		t.Fatalf("Err after Close: %v", err)
	}
}

// TestSendNeverBlocks: when the peer stops reading, the socket's buffers
// fill, the writer blocks, and Send reports a full queue instead of waiting.
func TestSendNeverBlocks(t *testing.T) {
	host := newFakeHost()
	p := dialRaw(t, host, ConnConfig{QueueLen: 4})
	big := ledger.GetObjects{Hashes: make([]ledger.Hash, 4000)} // 128 KB a frame
	for i := range 10_000 {
		err := p.conn.Send(peer.RequestID(i+1), big)
		if errors.Is(err, ErrQueueFull) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("10,000 frames of 128 KB queued to a peer that reads nothing")
}

// TestCloseBeforeStart: a Conn that never started tells the host nothing.
func TestCloseBeforeStart(t *testing.T) {
	host := newFakeHost()
	near, far := net.Pipe()
	defer far.Close()
	c := NewConn(near, "unstarted", host, ConnConfig{})
	_ = c.Close()
	c.Start() // too late: does nothing
	<-c.Done()
	if len(host.disconnects) != 0 || !errors.Is(c.Err(), ErrClosed) {
		t.Fatalf("%d disconnects, Err %v", len(host.disconnects), c.Err())
	}
}

package tcpnet

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/wire"
)

// Tests of the limits a Server puts on its clients as a rippled peer does
// (package resource), in a synctest bubble over net.Pipe, so that the
// balances decay on exact virtual seconds.

func rippledServer(t *testing.T, cfg ServerConfig) *Server {
	t.Helper()
	cfg.Ledger, cfg.Seed = testLedger, 1
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// closedByServer reads nc until the server closes it, skipping whatever it
// still had to say, and reports whether it did (rather than failing
// otherwise).
func closedByServer(nc net.Conn) bool {
	_, err := io.Copy(io.Discard, nc)
	return err == nil || errors.Is(err, io.ErrClosedPipe)
}

// TestServerCutsForCharges: 3,199 pings within a second leave the balance
// just under the drop threshold; the 3,200th cuts the connection. A redial
// from the same address is refused while the balance stays there, and
// charged FeeDrop for it; another address is served; after the balance has
// decayed the address is let back in. With LimitsOff nothing is cut.
func TestServerCutsForCharges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := rippledServer(t, ServerConfig{})
		nc, ok := dialFrom(t, s, "10.0.0.1")
		if !ok {
			t.Fatal("first connection refused")
		}
		for i := range 3199 {
			if !pingPong(nc, uint64(i+1)) {
				t.Fatalf("ping %d: no pong", i+1)
			}
		}
		synctest.Wait() // the pong is written before its ping is charged
		if st := s.Stats().Resources; st.Drops != 0 || st.PeakBalance != 3199*250/32 {
			t.Fatalf("after 3,199 pings: %+v, want no drop and a balance of %d", st, 3199*250/32)
		}
		ping, _ := wire.AppendMessage(nil, 3200, wire.Ping{})
		if _, err := nc.Write(ping); err != nil {
			t.Fatal(err)
		}
		if !closedByServer(nc) {
			t.Fatal("the 3,200th ping did not cut the connection")
		}
		synctest.Wait()
		if st := s.Stats().Resources; st.Drops != 1 || st.Warnings != 1 {
			t.Fatalf("after the cut: %+v, want 1 drop and 1 warning", st)
		}
		if _, ok := dialFrom(t, s, "10.0.0.1"); ok {
			t.Fatal("a redial while cut off was admitted")
		}
		if st := s.Stats().Resources; st.Refused != 1 || st.PeakBalance != (3200*250+2*6000)/32 {
			t.Fatalf("after the redial: %+v, want 1 refused, charged FeeDrop twice in all", st)
		}
		other, ok := dialFrom(t, s, "10.0.0.2")
		if !ok || !pingPong(other, 1) {
			t.Fatal("another address was not served")
		}
		elapse(2 * time.Second) // virtual: the balance decays under the threshold
		back, ok := dialFrom(t, s, "10.0.0.1")
		if !ok || !pingPong(back, 1) {
			t.Fatal("the address was not let back in after its balance decayed")
		}
	})
	synctest.Test(t, func(t *testing.T) {
		s := rippledServer(t, ServerConfig{LimitsOff: true})
		nc, _ := dialFrom(t, s, "10.0.0.1")
		for i := range 4000 {
			if !pingPong(nc, uint64(i+1)) {
				t.Fatalf("limits off: ping %d got no pong", i+1)
			}
		}
		synctest.Wait() // the last ping is charged after its pong is written
		if st := s.Stats().Resources; st.Drops != 0 || st.Warnings != 1 || st.PeakBalance != 4000*250/32 {
			t.Fatalf("limits off: %+v, want no drop, one warning, peak %d", st, 4000*250/32)
		}
	})
}

// TestServerDropsQueriesWhenBusy: with replies waiting a second each, 192
// queries fill the connection's send queue, and the 193rd is dropped
// unanswered (charged only the trivial fee); once the queue drains, queries
// are answered again. With LimitsOff all are answered.
func TestServerDropsQueriesWhenBusy(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("limits off %v", off), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := rippledServer(t, ServerConfig{Behaviour: Behaviour{Latency: simnet.Fixed(time.Second)}, LimitsOff: off})
				c := connectPipe(t, s, time.Now())
				for id := range uint64(193) {
					c.send(id+1, 1)
				}
				synctest.Wait()
				st := s.Stats()
				wantPlanned, wantDropped := 192, 1
				if off {
					wantPlanned, wantDropped = 193, 0
				}
				if st.Requests != wantPlanned || st.BusyDrops != wantDropped {
					t.Fatalf("limits off %v: %d planned, %d dropped; want %d, %d", off, st.Requests, st.BusyDrops, wantPlanned, wantDropped)
				}
				if !off {
					if want := int64(192*250+1) / 32; st.Resources.PeakBalance != want {
						t.Fatalf("peak balance %d, want %d: the dropped query costs 1", st.Resources.PeakBalance, want)
					}
				}
				got := c.nextN(wantPlanned)
				if got[len(got)-1] != "192@1s" && !off {
					t.Fatalf("last reply %s, want 192@1s", got[len(got)-1])
				}
				// The writer counts a reply out of the send queue once its
				// write returns, a moment after the client has read it: let
				// it, or the next query may still find the queue full.
				synctest.Wait()
				c.send(500, 1)
				if a := c.next(); a.id != 500 {
					t.Fatalf("after the queue drained: reply %v, want 500", a)
				}
			})
		})
	}
}

// TestServerTruncatesReplies: a query for 12,289 objects is answered with
// the first 12,288.
func TestServerTruncatesReplies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := rippledServer(t, ServerConfig{MaxItems: 20_000, MaxFrame: 1 << 20})
		near, far := net.Pipe()
		t.Cleanup(func() { _ = near.Close() })
		s.mu.Lock()
		s.serveLocked(far)
		s.mu.Unlock()
		small := smallestObject(t)
		req := ledger.GetObjects{Hashes: make([]ledger.Hash, 12_289)}
		for i := range req.Hashes {
			req.Hashes[i] = small
		}
		frame, _ := wire.AppendMessage(nil, 1<<24, req)
		go func() { _, _ = near.Write(frame) }()
		f, err := wire.ReadFrame(bufio.NewReader(near), 0)
		if err != nil {
			t.Fatal(err)
		}
		_, msg, err := wire.DecodeMessage(f, 20_000)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(msg.(ledger.Objects).Items); n != resource.MaxReplyObjects {
			t.Fatalf("reply of %d objects, want %d", n, resource.MaxReplyObjects)
		}
		if st := s.Stats(); st.Truncated != 1 {
			t.Fatalf("stats %+v, want 1 truncated", st)
		}
	})
}

// smallestObject is the hash of the test ledger's smallest node.
func smallestObject(t *testing.T) ledger.Hash {
	var best ledger.Hash
	size := -1
	for h := range testLedger.Hashes() {
		data, _ := testLedger.Get(h)
		if size < 0 || len(data) < size {
			best, size = h, len(data)
		}
	}
	if size*resource.MaxReplyObjects > 3<<20 {
		t.Fatalf("smallest node is %d bytes: a reply of %d would pass the frame cap", size, resource.MaxReplyObjects)
	}
	return best
}

// TestServerSkipsAndCharges: frames of types the server does not decode
// are skipped at no charge; a reply and a pong nobody asked for are
// charged FeeUselessData; none closes the connection, and a ping after them
// is answered.
func TestServerSkipsAndCharges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := rippledServer(t, ServerConfig{})
		nc, _ := dialFrom(t, s, "10.0.0.1")
		var stream []byte
		stream, _ = wire.AppendChatter(stream, wire.TypeStatusChange, 1)
		stream = append(stream, 0, 0, 0, 2, 0, 77, 1, 2) // type 77, two bytes
		stream = append(stream, mustFrame(t, 1, ledger.Objects{})...)
		stream = append(stream, mustFrame(t, 2, wire.Pong{})...)
		if _, err := nc.Write(stream); err != nil {
			t.Fatal(err)
		}
		if !pingPong(nc, 3) {
			t.Fatal("no pong after the frames: the connection was closed")
		}
		synctest.Wait() // the ping is charged after its pong is written
		st := s.Stats()
		if st.UnknownFrames != 2 || st.Useless != 2 || st.Refused != 0 {
			t.Fatalf("stats %+v, want 2 unknown frames skipped, 2 useless", st)
		}
		if want := int64(2*150+250) / 32; st.Resources.Charges != 3 || st.Resources.PeakBalance != want {
			t.Fatalf("accounts %+v, want 3 charges (2 useless, the ping) and balance %d", st.Resources, want)
		}
	})
}

// TestServerEchoesQueries: a reply echoes its query's ledgerHash, copies
// each object's nodeID into index and its ledgerSeq, and has no seq when
// the query had none, as rippled's does.
func TestServerEchoesQueries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := rippledServer(t, ServerConfig{})
		nc, _ := dialFrom(t, s, "10.0.0.1")
		root := testLedger.Root()
		ledgerHash := bytes.Repeat([]byte{7}, 32)
		var obj []byte
		obj = protowire.AppendTag(obj, 1, protowire.BytesType)
		obj = protowire.AppendBytes(obj, root[:])
		obj = protowire.AppendTag(obj, 2, protowire.BytesType)
		obj = protowire.AppendBytes(obj, []byte("node id"))
		obj = protowire.AppendTag(obj, 5, protowire.VarintType)
		obj = protowire.AppendVarint(obj, 38129)
		var q []byte
		q = protowire.AppendTag(q, 1, protowire.VarintType)
		q = protowire.AppendVarint(q, 4) // state nodes
		q = protowire.AppendTag(q, 2, protowire.VarintType)
		q = protowire.AppendVarint(q, 1) // a query, with no seq
		q = protowire.AppendTag(q, 4, protowire.BytesType)
		q = protowire.AppendBytes(q, ledgerHash)
		q = protowire.AppendTag(q, 6, protowire.BytesType)
		q = protowire.AppendBytes(q, obj)
		frame, _ := wire.AppendFrame(nil, wire.Frame{Type: wire.TypeGetObjects, Payload: q})
		go func() { _, _ = nc.Write(frame) }()
		f, err := wire.ReadFrame(nc, 0)
		if err != nil {
			t.Fatal(err)
		}
		fields := topFields(t, f.Payload)
		if _, ok := fields[3]; ok {
			t.Error("the reply has a seq; the query had none")
		}
		if got := fields[4]; len(got) != 1 || !bytes.Equal(got[0], ledgerHash) {
			t.Errorf("ledgerHash %x, want %x", got, ledgerHash)
		}
		if len(fields[6]) != 1 {
			t.Fatalf("%d objects, want 1", len(fields[6]))
		}
		o := topFields(t, fields[6][0])
		if got := o[3]; len(got) != 1 || string(got[0]) != "node id" {
			t.Errorf("index %q, want the nodeID", got)
		}
		if got := o[5]; len(got) != 1 || string(got[0]) != string(protowire.AppendVarint(nil, 38129)) {
			t.Errorf("ledgerSeq %x, want 38129", got)
		}
		_, msg, err := wire.DecodeMessage(f, 0)
		if err != nil {
			t.Fatal(err)
		}
		checkHonest(t, ledger.GetObjects{Hashes: []ledger.Hash{root}}, msg)
	})
}

// topFields splits a protobuf message into its fields' raw values by
// number: bytes fields' contents, varints' encodings.
func topFields(t *testing.T, p []byte) map[protowire.Number][][]byte {
	t.Helper()
	out := map[protowire.Number][][]byte{}
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 {
			t.Fatalf("bad tag: %v", protowire.ParseError(n))
		}
		p = p[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			b, m := protowire.ConsumeBytes(p)
			if m < 0 {
				t.Fatalf("bad bytes: %v", protowire.ParseError(m))
			}
			v, n = b, m
		case protowire.VarintType:
			_, m := protowire.ConsumeVarint(p)
			if m < 0 {
				t.Fatalf("bad varint: %v", protowire.ParseError(m))
			}
			v, n = p[:m], m
		default:
			n = protowire.ConsumeFieldValue(num, typ, p)
		}
		out[num] = append(out[num], v)
		p = p[n:]
	}
	return out
}

// TestChattyServer: a Client fetches from a server that interleaves status
// changes, manifests, endpoints and pings with its replies, as rippled
// does: every answer arrives, the chatter is skipped and counted, the
// pings are answered (so the server charges no pong as unsolicited), and
// the connection stays up.
func TestChattyServer(t *testing.T) {
	ctx := testContext(t)
	s, err := NewServer(ServerConfig{Ledger: testLedger, Chatty: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	host := newFakeHost()
	skipped := make(chan wire.Type, 256)
	c := NewClient(host, ClientConfig{Conn: ConnConfig{Skipped: func(_ peer.ID, typ wire.Type) { skipped <- typ }}})
	defer c.Close()
	c.Add("chatty", s.Addr())
	recv(t, ctx, host.connectCh, "the connection")
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	for id := range peer.RequestID(20) {
		if err := host.peer("chatty").Send(1<<24+id, req); err != nil {
			t.Fatal(err)
		}
		d := recv(t, ctx, host.delivered, "an answer")
		checkHonest(t, req, d.msg)
	}
	// 3 frames on connecting, then one before each reply, a quarter of
	// them pings.
	seen := map[wire.Type]int{}
	for range 3 + 20 - 5 {
		seen[recv(t, ctx, skipped, "a skipped frame")]++
	}
	for _, typ := range []wire.Type{wire.TypeStatusChange, wire.TypeManifests, wire.TypeEndpoints} {
		if seen[typ] < 4 {
			t.Errorf("skipped %v: %d, want at least 4", typ, seen[typ])
		}
	}
	if seen[wire.TypePing] != 0 {
		t.Error("a ping was skipped: it must be answered")
	}
	c.Close()
	recv(t, ctx, host.disconnects, "the disconnect at Close")
	s.Close()
	st := s.Stats()
	if st.Chatter != 23 || st.Useless != 0 || st.Refused != 0 || c.Dials() != 1 {
		t.Fatalf("stats %+v, %d dials: want 23 chatter frames, no useless pong, no refusal, one dial", st, c.Dials())
	}
}

package tcpnet

import (
	"errors"
	"sync"
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// TestConnSkipsWhatItDoesNotKnow: frames of types the Conn does not decode
// (rippled's status changes, manifests, endpoints, and any other) are skipped
// and counted, not fatal; an unsolicited pong is unwanted traffic, not
// fatal; the responses around them arrive.
func TestConnSkipsWhatItDoesNotKnow(t *testing.T) {
	ctx := testContext(t)
	host := newFakeHost()
	var mu sync.Mutex
	var skipped []wire.Type
	var unwanted []error
	p := dialRaw(t, host, ConnConfig{
		Skipped: func(_ peer.ID, typ wire.Type) { mu.Lock(); skipped = append(skipped, typ); mu.Unlock() },
		Traffic: func(_ peer.ID, _ int, err error) {
			if err != nil {
				mu.Lock()
				unwanted = append(unwanted, err)
				mu.Unlock()
			}
		},
	})
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	var stream []byte
	for _, typ := range []wire.Type{wire.TypeStatusChange, wire.TypeManifests, wire.TypeEndpoints} {
		var err error
		if stream, err = wire.AppendChatter(stream, typ, 1); err != nil {
			t.Fatal(err)
		}
	}
	stream = append(stream, 0, 0, 0, 3, 0, 41, 1, 2, 3) // a validation (41), of three bytes
	pong, _ := wire.AppendMessage(nil, 7, wire.Pong{})
	stream = append(stream, pong...)
	answer, _ := wire.AppendMessage(nil, 42, testLedger.Answer(req))
	stream = append(stream, answer...)
	if _, err := p.far.Write(stream); err != nil {
		t.Fatal(err)
	}
	d := recv(t, ctx, host.delivered, "the answer after the chatter")
	if d.id != 42 {
		t.Fatalf("delivered %+v", d)
	}
	if p.conn.Err() != nil {
		t.Fatalf("the connection ended: %v", p.conn.Err())
	}
	if got := p.conn.Skipped(); got != 4 {
		t.Fatalf("Skipped() = %d, want 4", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []wire.Type{wire.TypeStatusChange, wire.TypeManifests, wire.TypeEndpoints, 41}
	if len(skipped) != len(want) {
		t.Fatalf("skipped %v, want %v", skipped, want)
	}
	for i := range want {
		if skipped[i] != want[i] {
			t.Fatalf("skipped %v, want %v", skipped, want)
		}
	}
	if len(unwanted) != 1 || !errors.Is(unwanted[0], ErrUnsolicited) {
		t.Fatalf("unwanted traffic %v, want the pong", unwanted)
	}
}

// TestConnSolicitedPong: a pong that answers our ping is no unwanted
// traffic.
func TestConnSolicitedPong(t *testing.T) {
	ctx := testContext(t)
	host := newFakeHost()
	unwanted := make(chan error, 4)
	p := dialRaw(t, host, ConnConfig{Traffic: func(_ peer.ID, _ int, err error) { unwanted <- err }})
	if err := p.conn.Send(1<<24, wire.Ping{}); err != nil {
		t.Fatal(err)
	}
	pong, _ := wire.AppendMessage(nil, 1<<24, wire.Pong{})
	answer, _ := wire.AppendMessage(nil, 1<<24+1, ledger.Objects{})
	if _, err := p.far.Write(append(pong, answer...)); err != nil {
		t.Fatal(err)
	}
	recv(t, ctx, host.delivered, "the answer after the pong")
	if err := recv(t, ctx, unwanted, "the answer's traffic"); err != nil {
		t.Fatalf("traffic error %v: the pong was taken for unsolicited", err)
	}
	if len(unwanted) != 0 {
		t.Fatalf("%d more traffic reports", len(unwanted))
	}
}

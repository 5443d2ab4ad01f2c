package simnet

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// testLedger is shared by every test: it is immutable.
var testLedger = func() *ledger.Ledger {
	l, err := ledger.Generate(1, 2000)
	if err != nil {
		panic(err)
	}
	return l
}()

// testHashes are the ledger's node hashes, to build requests from.
var testHashes = func() []ledger.Hash {
	var hs []ledger.Hash
	for h := range testLedger.Hashes() {
		hs = append(hs, h)
	}
	return hs
}()

// record is one callback the network made, as the host saw it.
type record struct {
	at   time.Duration // since the harness started
	kind string        // "deliver", "down", "up"
	from peer.ID
	id   peer.RequestID
	msg  any
}

func (r record) String() string {
	switch m := r.msg.(type) {
	case ledger.Objects:
		var b strings.Builder
		for _, it := range m.Items {
			switch {
			case !ledger.Verify(it.Hash, it.Data):
				fmt.Fprintf(&b, " %s:corrupt", it.Hash)
			default:
				fmt.Fprintf(&b, " %s", it.Hash)
			}
		}
		return fmt.Sprintf("%v %s %s id=%d objects%s", r.at, r.kind, r.from, r.id, b.String())
	case nil:
		if r.id != 0 { // a refusal
			return fmt.Sprintf("%v %s %s id=%d", r.at, r.kind, r.from, r.id)
		}
		return fmt.Sprintf("%v %s %s", r.at, r.kind, r.from)
	}
	return fmt.Sprintf("%v %s %s id=%d %T", r.at, r.kind, r.from, r.id, r.msg)
}

// harness is a network on a mock clock whose callbacks are recorded. Create
// it inside a synctest bubble.
type harness struct {
	t     *testing.T
	clk   *clock.Mock
	start time.Time
	net   *Network

	mu  sync.Mutex
	log []record
	// onDeliver, if set, runs inside Deliver after recording (the host's
	// reaction, e.g. sending the next request).
	onDeliver func(r record)
}

func newHarness(t *testing.T, seed uint64) *harness {
	t.Helper()
	return newHarnessWith(t, seed, false)
}

// newHarnessWith is newHarness, with Config.Refuse set (recording "refuse")
// if refusals is.
func newHarnessWith(t *testing.T, seed uint64, refusals bool) *harness {
	t.Helper()
	return newHarnessConfig(t, seed, refusals, func(*Config) {})
}

// newHarnessConfig is newHarnessWith, with the Config changed by tune.
func newHarnessConfig(t *testing.T, seed uint64, refusals bool, tune func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clk: clock.NewMock()}
	h.start = h.clk.Now()
	cfg := Config{
		Ledger: testLedger,
		Clock:  h.clk,
		Seed:   seed,
		Deliver: func(from peer.ID, id peer.RequestID, msg any) {
			h.add(record{kind: "deliver", from: from, id: id, msg: msg})
		},
		OnDisconnect: func(p *Peer) { h.add(record{kind: "down", from: p.ID()}) },
		OnReconnect:  func(p *Peer) { h.add(record{kind: "up", from: p.ID()}) },
	}
	if refusals {
		cfg.Refuse = func(from peer.ID, id peer.RequestID) { h.add(record{kind: "refuse", from: from, id: id}) }
	}
	tune(&cfg)
	net, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.net = net
	t.Cleanup(net.Close)
	return h
}

func (h *harness) add(r record) {
	r.at = h.clk.Now().Sub(h.start)
	h.mu.Lock()
	h.log = append(h.log, r)
	react := h.onDeliver
	h.mu.Unlock()
	if react != nil && r.kind == "deliver" {
		react(r)
	}
}

// records returns what was recorded so far and forgets it.
func (h *harness) records() []record {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.log
	h.log = nil
	return out
}

// advance moves the mock clock forward by d, letting every callback due
// within d run at its own instant.
func (h *harness) advance(d time.Duration) {
	synctest.Wait()
	h.clk.Add(d)
	synctest.Wait()
}

func (h *harness) now() time.Duration { return h.clk.Now().Sub(h.start) }

func (h *harness) addPeer(id peer.ID, prof Profile) *Peer {
	h.t.Helper()
	p, err := h.net.AddPeer(id, prof)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// request returns a GetObjects for k hashes starting at the i-th.
func request(i, k int) ledger.GetObjects {
	req := ledger.GetObjects{}
	for j := range k {
		req.Hashes = append(req.Hashes, testHashes[(i+j)%len(testHashes)])
	}
	return req
}

// send sends request(id, k) under id and fails the test on error.
func (h *harness) send(p *Peer, id uint64, k int) ledger.GetObjects {
	h.t.Helper()
	req := request(int(id), k)
	if err := p.Send(peer.RequestID(id), req); err != nil {
		h.t.Fatalf("send %d: %v", id, err)
	}
	return req
}

// checkHonest fails unless msg is the honest answer to req.
func checkHonest(t *testing.T, req ledger.GetObjects, msg any) {
	t.Helper()
	resp, ok := msg.(ledger.Objects)
	if !ok {
		t.Fatalf("response is %T, want ledger.Objects", msg)
	}
	if len(resp.Items) != len(req.Hashes) {
		t.Fatalf("%d items for %d hashes", len(resp.Items), len(req.Hashes))
	}
	for i, it := range resp.Items {
		if it.Hash != req.Hashes[i] || !ledger.Verify(it.Hash, it.Data) {
			t.Fatalf("item %d: %+v is not the object %s", i, it, req.Hashes[i])
		}
	}
}

// delays returns the delivery times of recs, which must all be deliveries.
func delays(t *testing.T, recs []record) []time.Duration {
	t.Helper()
	var ds []time.Duration
	for _, r := range recs {
		if r.kind != "deliver" {
			t.Fatalf("unexpected %v", r)
		}
		ds = append(ds, r.at)
	}
	return ds
}

func peerID(s string) peer.ID { return peer.ID(s) }

func bubble(t *testing.T, f func(t *testing.T)) { synctest.Test(t, f) }

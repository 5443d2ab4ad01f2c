package tcpnet

import (
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// mapNodes serves the nodes of a map, as a node store would, and counts
// lookups.
type mapNodes struct {
	nodes   map[ledger.Hash][]byte
	lookups chan ledger.Hash
}

func (m mapNodes) Get(h ledger.Hash) ([]byte, bool) {
	m.lookups <- h
	data, ok := m.nodes[h]
	return data, ok
}

// TestServerServesNodes: a server given Nodes instead of a Ledger looks
// each requested hash up there, answers with what it finds (leaving out
// what it does not), and counts the objects it sent; two servers share
// one Nodes. A config with both, or neither, is refused.
func TestServerServesNodes(t *testing.T) {
	root, _ := testLedger.Get(testLedger.Root())
	unknown := ledger.Hash{1}
	nodes := mapNodes{nodes: map[ledger.Hash][]byte{testLedger.Root(): root}, lookups: make(chan ledger.Hash, 8)}
	ctx := testContext(t)
	for i := range 2 {
		s, err := NewServer(ServerConfig{Nodes: nodes, Seed: 1})
		if err == nil {
			err = s.Listen("127.0.0.1:0")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		host := newFakeHost()
		c := NewClient(host, ClientConfig{Channels: 1})
		c.Add("s", s.Addr())
		recv(t, ctx, host.connectCh, "the connection")
		if err := host.peer("s").Send(peer.RequestID(1), ledger.GetObjects{Hashes: []ledger.Hash{unknown, testLedger.Root()}}); err != nil {
			t.Fatal(err)
		}
		d := recv(t, ctx, host.delivered, "the answer")
		resp := d.msg.(ledger.Objects)
		if len(resp.Items) != 1 || resp.Items[0].Hash != testLedger.Root() || !ledger.Verify(testLedger.Root(), resp.Items[0].Data) {
			t.Fatalf("server %d answered %+v", i, resp)
		}
		if got := []ledger.Hash{recv(t, ctx, nodes.lookups, "a lookup"), recv(t, ctx, nodes.lookups, "a lookup")}; got[0] != unknown || got[1] != testLedger.Root() {
			t.Fatalf("server %d looked up %v", i, got)
		}
		c.Close()
		s.Close()
		if st := s.Stats(); st.Replies != 1 || st.Objects != 1 {
			t.Fatalf("server %d: %d replies, %d objects; want 1 and 1", i, st.Replies, st.Objects)
		}
	}
	if _, err := NewServer(ServerConfig{Ledger: testLedger, Nodes: nodes}); err == nil {
		t.Error("a server given both a ledger and nodes")
	}
	if _, err := NewServer(ServerConfig{}); err == nil {
		t.Error("a server given nothing to serve")
	}
}

package overlay

import (
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/simnet"
)

// linkHost records what a node's host is told of its links.
type linkHost struct {
	connects    []peer.Peer
	disconnects []peer.ID
}

func (h *linkHost) Connect(p peer.Peer, _ int) error { h.connects = append(h.connects, p); return nil }
func (h *linkHost) Disconnect(id peer.ID) error {
	h.disconnects = append(h.disconnects, id)
	return nil
}
func (h *linkHost) Deliver(peer.ID, peer.RequestID, any) error {
	return nil
}

// limitedPair returns a simulation of 3 nodes whose node 0 asks node 1 on
// the link returned, with a recording host and no fetch running.
func limitedPair(t *testing.T, off bool, svc simnet.Service) (*simulation, *link, *linkHost) {
	t.Helper()
	cfg, err := Config{Ledger: mustGenerate(t, 1, 40), Nodes: 3, Degree: 2, Seeders: 1, LimitsOff: off, Service: svc}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := newSimulation(cfg, Adaptive)
	u, v := s.nodes[0], s.nodes[1]
	h := &linkHost{}
	u.fetching, u.host = true, h
	u.connect = func(p peer.Peer) error { return h.Connect(p, 1) }
	return s, &link{sim: s, from: u, to: v, latency: 10 * time.Millisecond}, h
}

// runUntil runs the simulation's events up to at (virtual, from the start),
// and moves its time to at.
func runUntil(s *simulation, at time.Duration) {
	s.clock.at(epoch.Add(at).Sub(s.clock.Now()), func() {})
	for {
		fn, ok := s.clock.next(epoch.Add(at))
		if !ok {
			return
		}
		fn()
	}
}

// TestNodeCutsAndRefusesRedials: 3,200 queries within a second cut the
// link; the asking node is told one latency later and redials with
// tcpnet's back-off; the redials are refused while its balance stays at
// the threshold and the first let in connects a fresh link. Limits off,
// nothing is cut.
func TestNodeCutsAndRefusesRedials(t *testing.T) {
	s, l, h := limitedPair(t, false, simnet.Service{})
	hashes := []ledger.Hash{s.cfg.Ledger.Root()}
	for i := range 3200 {
		l.Send(peer.RequestID(i+1), ledger.GetObjects{Hashes: hashes})
		if i%100 == 99 {
			runUntil(s, time.Duration(i/100+1)*time.Millisecond) // the answers leave
		}
	}
	runUntil(s, 100*time.Millisecond) // every query has arrived
	if !l.cut {
		t.Fatalf("3,200 queries in a second did not cut the link: %+v", l.to.accounts.Stats())
	}
	runUntil(s, 10*time.Second)
	st := l.to.accounts.Stats()
	if len(h.disconnects) != 1 || h.disconnects[0] != l.to.id || st.Drops != 1 {
		t.Fatalf("disconnects %v, accounts %+v: want the host told once of 1 cut", h.disconnects, st)
	}
	if len(h.connects) != 1 || st.Refused < 2 {
		t.Fatalf("%d links connected again, %d redials refused: want one, after at least 2 refused", len(h.connects), st.Refused)
	}
	fresh := h.connects[0].(*link)
	if fresh == l || fresh.cut || fresh.to != l.to {
		t.Fatalf("the redial connected %+v", fresh)
	}

	s, l, h = limitedPair(t, true, simnet.Service{})
	for i := range 4000 {
		l.Send(peer.RequestID(i+1), ledger.GetObjects{Hashes: hashes})
		if i%100 == 99 {
			runUntil(s, time.Duration(i/100+1)*time.Millisecond)
		}
	}
	runUntil(s, 100*time.Millisecond)
	if st := l.to.accounts.Stats(); l.cut || len(h.disconnects) != 0 || st.Warnings != 1 || st.PeakBalance != 4000*250/32 {
		t.Fatalf("limits off: cut %v, accounts %+v", l.cut, st)
	}
}

// TestNodeDropsQueriesWhenBusy: queries that find 192 answers queued on
// their link are dropped, for the trivial fee.
func TestNodeDropsQueriesWhenBusy(t *testing.T) {
	// Ample workers: every query is served at once, and its answer waits
	// only for the link.
	s, l, _ := limitedPair(t, false, simnet.Service{Workers: 1000, PerRequest: time.Microsecond})
	hashes := []ledger.Hash{s.cfg.Ledger.Root()}
	for i := range 400 {
		l.Send(peer.RequestID(i+1), ledger.GetObjects{Hashes: hashes})
		if i%80 == 79 {
			runUntil(s, time.Duration(i/80+1)*time.Millisecond)
		}
	}
	// Every query has arrived, over 5ms, before the first answer is
	// delivered, 20ms on.
	runUntil(s, 16*time.Millisecond)
	if l.to.busyDrops == 0 || l.queued < resource.DropSendQueue {
		t.Fatalf("%d dropped with %d answers queued; want drops once %d were", l.to.busyDrops, l.queued, resource.DropSendQueue)
	}
	if got := l.queued + l.to.busyDrops; got != 400 {
		t.Fatalf("%d queued + %d dropped, want 400", l.queued, l.to.busyDrops)
	}
}

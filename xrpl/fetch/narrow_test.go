package fetch

import (
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// chainLedger builds a ledger of two leaves whose keys share their first
// shared nibbles: the tree is a chain of shared single-child inner nodes
// below the root, as two order book directories make in a real ledger
// (ledger 40000 has a chain 49 levels deep). Each level is known only
// from the one above, so a fetch of it is a sequence of round trips.
func chainLedger(t *testing.T, shared int) *ledger.Ledger {
	t.Helper()
	var a, b ledger.Hash
	a[shared/2] = 0x10 >> (4 * (shared % 2)) // nibble shared differs: 1 against 0
	l, err := ledger.Build([]ledger.Entry{{Key: a, Data: []byte("a")}, {Key: b, Data: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNarrowFrontierTakesTheFastestPeer fetches a chain 41 levels deep from
// four peers, of which p02 is by far the fastest but lacks everything at
// first, as a neighbour does in an overlay catching up to a new ledger: its
// first answers are empty. The others answer everything, slowly. With one
// hash waiting at a time, once p02's bench for lacking ends the fetch sends
// the next level to it again, although it has failed more recently than
// the others: the chain costs p02's round trip a level, not the slow
// peers'.
func TestNarrowFrontierTakesTheFastestPeer(t *testing.T) {
	const shared = 40
	l := chainLedger(t, shared)
	latencies := []time.Duration{20 * ms, 25 * ms, 5 * ms, 30 * ms}
	peers := make([]simnet.Profile, len(latencies))
	for i, d := range latencies {
		peers[i] = simnet.Profile{Latency: simnet.Fixed(d)}
	}
	var lacked atomic.Int32
	lacking := func(from peer.ID, _ time.Duration, msg any) any {
		if from == "p02" && lacked.Add(1) <= 2 {
			return ledger.Objects{}
		}
		return msg
	}
	o := runSim(t, sim{strategy: "scheduler", ledger: l, peers: peers, limits: &peer.Options{}, seed: 1, answer: lacking})
	mustComplete(t, o, l)

	requests := map[string]int{}
	for _, p := range o.rep.Peers {
		requests[p.ID] = p.Requests
	}
	levels := shared + 3 // the root, the chain, the inner node that splits, a leaf
	if fast := requests["p02"]; fast < levels-8 {
		t.Errorf("p02, the fastest peer, got %d requests (%v); want nearly one a level of the %d", fast, requests, levels)
	}
	// Its first answers lack, its bench is at most penalty's 50ms after a
	// first strike (100ms after a second), and a few levels go to a slow
	// peer meanwhile.
	if limit := time.Duration(levels)*latencies[2] + 100*ms + 8*slices.Max(latencies); o.virtual > limit {
		t.Errorf("the %d levels took %v; want at most %v (a level per 5ms round trip of p02, after its bench)", levels, o.virtual, limit)
	}
}

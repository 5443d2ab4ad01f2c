package fetch

import (
	"testing"

	"github.com/peersched/peersched/peer"
)

// TestPeerRateSizesBatches: peers the scheduler keeps within RippledRate
// (16 requests a second) hold a fetch of fixed 64-hash requests to 1,024
// objects a second each; told the rate (Config.PeerRate), the fetch asks
// for more hashes per request and finishes sooner, on the same peers.
func TestPeerRateSizesBatches(t *testing.T) {
	paced := &peer.Options{Rate: RippledRate}
	l := mustGenerate(7, 30_000) // beyond what the peers' bursts pay for
	fixed := runSim(t, sim{strategy: "scheduler", ledger: l, peers: honest(4), limits: paced, seed: 3})
	sized := runSim(t, sim{strategy: "scheduler", ledger: l, peers: honest(4), limits: paced, seed: 3, cfg: Config{PeerRate: RippledRate}})
	mustComplete(t, fixed, l)
	mustComplete(t, sized, l)
	t.Logf("fixed: %v, batch mean %.1f, %d requests; sized: %v, batch mean %.1f, %d requests",
		fixed.virtual, fixed.rep.BatchMean, fixed.rep.Requests, sized.virtual, sized.rep.BatchMean, sized.rep.Requests)
	if fixed.rep.BatchMean > DefaultBatch {
		t.Errorf("fixed batches: mean %.1f, above %d", fixed.rep.BatchMean, DefaultBatch)
	}
	if sized.rep.BatchMean <= 2*DefaultBatch {
		t.Errorf("sized batches: mean %.1f, want well above %d", sized.rep.BatchMean, DefaultBatch)
	}
	if 2*sized.virtual > fixed.virtual {
		t.Errorf("sized batches took %v, fixed ones %v: want under half", sized.virtual, fixed.virtual)
	}
}

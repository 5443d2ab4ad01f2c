package overlay

import (
	"runtime"
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/internal/fixtures"
	"github.com/peersched/peersched/xrpl/ledger"
)

// maxNodeHeap bounds the live heap a fetching node costs at the overlay's
// peak. About 55 kB is measured (BENCHMARKS.md, "The overlay at 10,000
// nodes"); a request table's first page of 1,024 slots, as it was, added
// 57 kB, and 10,000 nodes at 80 kB would not fit in 1.2 GB.
const maxNodeHeap = 80 << 10

// TestNodeHeapStaysSmall: across an overlay of 300 nodes fetching the real
// ledger 40000, the live heap above what it was before the run, after a
// full collection, stays under maxNodeHeap per fetching node. Collections
// run from the simulation's own progress calls (each node done, each
// virtual second), on its goroutine, so what is measured is the same each
// run.
func TestNodeHeapStaysSmall(t *testing.T) {
	if checked {
		t.Skip("the race detector and the lock-order checks change what is allocated")
	}
	l, _, err := ledger.LoadFile(fixtures.Ledger(t, fixtures.Ledger40000))
	if err != nil {
		t.Fatal(err)
	}
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := live()
	var peak uint64
	samples := 0
	cfg := Config{Ledger: l, Nodes: 300, Degree: 8, Seed: 1, TimeLimit: 15 * time.Second, Progress: func(p Progress) {
		if p.Completed%10 != 0 {
			return
		}
		samples++
		peak = max(peak, live())
	}}
	r := mustRun(t, cfg, Adaptive)
	if r.Completed != r.Fetching || samples < 10 {
		t.Fatalf("%d of %d done, %d samples", r.Completed, r.Fetching, samples)
	}
	perNode := (max(peak, base) - base) / uint64(r.Fetching)
	t.Logf("peak live heap %d kB above the start, %d B a fetching node", (peak-base)>>10, perNode)
	if perNode > maxNodeHeap {
		t.Errorf("%d B of live heap a fetching node at the peak; want at most %d", perNode, maxNodeHeap)
	}
}

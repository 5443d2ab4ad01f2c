package bench

import (
	"testing"

	"github.com/peersched/peersched/internal/race"
)

// TestStepAllocatesAtMostOnce pins DESIGN.md's performance promise: at
// steady state a request's life (its answer delivered, the channel it
// frees offered, the next request sent) allocates zero or one times. With
// callbacks inline the whole life runs on the stepping goroutine, so the
// process's allocation count is the request's.
func TestStepAllocatesAtMostOnce(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates for its own bookkeeping")
	}
	for _, inflight := range []int{100, 10_000} {
		sys, err := buildSystem("scheduler-inline", inflight, false)
		if err != nil {
			t.Fatal(err)
		}
		if err := sys.fill(inflight); err != nil {
			sys.close()
			t.Fatal(err)
		}
		for range 2 * inflight { // every slot, table and queue at its size
			if err := sys.step(); err != nil {
				sys.close()
				t.Fatal(err)
			}
		}
		var stepErr error
		allocs := testing.AllocsPerRun(1000, func() {
			if err := sys.step(); err != nil && stepErr == nil {
				stepErr = err
			}
		})
		sys.close()
		if stepErr != nil {
			t.Fatal(stepErr)
		}
		if allocs > 1 {
			t.Errorf("inflight %d: %.2f allocations per request, want at most 1", inflight, allocs)
		}
	}
}

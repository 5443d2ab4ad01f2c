package memlimit

import (
	"math"
	"runtime/debug"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// restore puts the process's limit back as it was when the test ends.
func restore(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
}

// TestSet: Set applies a positive limit, and leaves the runtime's alone
// for 0 or less and whenever GOMEMLIMIT is set.
func TestSet(t *testing.T) {
	restore(t)
	debug.SetMemoryLimit(math.MaxInt64)
	if got := Set(200 << 20); got != 200<<20 || debug.SetMemoryLimit(-1) != 200<<20 {
		t.Fatalf("Set(200 MiB) = %d, runtime's limit %d", got, debug.SetMemoryLimit(-1))
	}
	for _, limit := range []int64{0, -1} {
		if got := Set(limit); got != 0 || debug.SetMemoryLimit(-1) != 200<<20 {
			t.Fatalf("Set(%d) = %d, runtime's limit %d; want 0 and the limit left at 200 MiB", limit, got, debug.SetMemoryLimit(-1))
		}
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	if !FromEnv() {
		t.Fatal("FromEnv with GOMEMLIMIT set: false")
	}
	if got := Set(100 << 20); got != 0 || debug.SetMemoryLimit(-1) != 200<<20 {
		t.Fatalf("Set with GOMEMLIMIT set = %d, runtime's limit %d; want 0 and the limit unchanged", got, debug.SetMemoryLimit(-1))
	}
}

// TestLiveHeap: what the program holds is counted, and goes once dropped.
func TestLiveHeap(t *testing.T) {
	before := LiveHeap()
	held := make([]byte, 64<<20)
	during := LiveHeap()
	held[len(held)-1] = 1
	// Within a page: the runtime's own small allocations come and go.
	if during-before < 63<<20 {
		t.Fatalf("live heap %d, then %d holding 64 MiB more", before, during)
	}
	held = nil
	if after := LiveHeap(); during-after < 63<<20 {
		t.Fatalf("live heap %d holding 64 MiB, %d after dropping it", during, after)
	}
	_ = held
}

// TestSetAboveLive: the limit is the heap live now plus the headroom, and
// nothing is set while GOMEMLIMIT is.
func TestSetAboveLive(t *testing.T) {
	restore(t)
	debug.SetMemoryLimit(math.MaxInt64)
	live := LiveHeap()
	got := SetAboveLive(100 << 20)
	// The collections in between change the live heap by a few KiB at most.
	if got < live+100<<20-1<<20 || got > live+100<<20+1<<20 || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("SetAboveLive(100 MiB) = %d with %d live, runtime's limit %d", got, live, debug.SetMemoryLimit(-1))
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	if again := SetAboveLive(200 << 20); again != 0 || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("SetAboveLive with GOMEMLIMIT set = %d, runtime's limit %d; want 0 and %d", again, debug.SetMemoryLimit(-1), got)
	}
}

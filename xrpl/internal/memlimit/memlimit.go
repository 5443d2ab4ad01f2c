// Package memlimit sets the Go runtime's soft memory limit for the xrpl
// commands (runtime/debug.SetMemoryLimit), the same way in each: the
// GOMEMLIMIT environment variable, when set, wins over what a command
// computes or its flags say.
//
// The limit is soft. The runtime collects garbage more often as the memory
// it manages (heap, stacks, its own structures; not what C code allocates)
// nears the limit, so that the collector's headroom, which by default lets
// the heap grow to twice what was live at the last collection, shrinks
// instead of the process growing; memory the program needs is never
// refused, and a live heap above the limit only makes the collector run
// often (the runtime caps it at about half the CPU).
package memlimit

import (
	"os"
	"runtime"
	"runtime/debug"
)

// FromEnv reports whether the GOMEMLIMIT environment variable is set: the
// runtime has then applied it as the process started, and Set leaves it.
func FromEnv() bool {
	_, set := os.LookupEnv("GOMEMLIMIT")
	return set
}

// Set sets the soft memory limit to limit bytes and returns it, unless
// GOMEMLIMIT is set or limit is 0 or less; it then changes nothing and
// returns 0.
func Set(limit int64) int64 {
	if limit <= 0 || FromEnv() {
		return 0
	}
	debug.SetMemoryLimit(limit)
	return limit
}

// LiveHeap collects garbage and returns the bytes of heap objects left:
// what the program holds now, which a limit computed from it adds to.
func LiveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// SetAboveLive sets the soft memory limit to the heap live now (LiveHeap)
// plus headroom bytes, and returns it, unless GOMEMLIMIT is set: it then
// changes nothing, without collecting, and returns 0.
func SetAboveLive(headroom int64) int64 {
	if FromEnv() {
		return 0
	}
	return Set(LiveHeap() + headroom)
}

package main

import (
	"flag"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/internal/memlimit"
	"github.com/peersched/peersched/xrpl/internal/profile"
)

// processOptions are the flags about the process itself rather than the
// fetch: its soft memory limit and its profiles.
type processOptions struct {
	memoryLimit string // "auto", "off" or MiB
	limitMiB    int64  // memoryLimit's MiB; 0 for auto or off
	cpuProfile  string
	memProfile  string
}

// fetchHeadroomMiB is what -memory-limit auto allows the fetch's own
// structures beyond the heap live before it starts: the hashes waiting
// and asked (32 bytes each; a few hundred thousand at four million
// leaves, more as the tree deepens), the requests and replies in flight,
// the nodes verified and not yet written, and the connections' buffers
// (about 25 MB live at one and four million leaves besides the hashes).
// With Pebble's memtables and cache outside the Go heap (two or three of
// 32 MB, and 8 MB), it keeps a fetch from peers on other processes under
// 300 MB. Less costs the collector dearly at mainnet size: at 19 million
// entries 160 MiB took the fetcher 7.2 µs of CPU a node, and a limit of
// 200 MiB 4.7 µs, at a peak RSS of 279 MB (BENCHMARKS.md).
const fetchHeadroomMiB = 200

func (p *processOptions) register(fs *flag.FlagSet) {
	fs.StringVar(&p.memoryLimit, "memory-limit", "auto", "the Go runtime's soft memory limit (heap, stacks and the runtime's own; not Pebble's memtables and block cache, which cgo builds keep outside it): past it the garbage collector runs more often rather than letting the heap grow to twice what is live; memory the fetch needs is never refused. auto: the heap live as the fetch begins (with the ledger this process generated or loaded, if any), plus 200 MiB, and no limit with -store mem (whose heap grows with the ledger); off: no limit; N: N MiB. The GOMEMLIMIT environment variable, if set, wins")
	fs.StringVar(&p.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file, for go tool pprof")
	fs.StringVar(&p.memProfile, "memprofile", "", "write a heap profile to this file, for go tool pprof, once the fetch has verified half the nodes it expects, or as it ends if it does not know how many or stops short (with several strategies, the last fetch's)")
}

// check completes p from -memory-limit's string and checks the flags, each
// error naming its flag.
func (p *processOptions) check() error {
	switch p.memoryLimit {
	case "auto", "off":
		return nil
	}
	n, err := strconv.ParseInt(p.memoryLimit, 10, 64)
	if err != nil || n < 1 || n > 1<<30 {
		return fmt.Errorf("-memory-limit %q: want auto, off or a size in MiB (1 or more)", p.memoryLimit)
	}
	p.limitMiB = n
	return nil
}

// limitMemory sets the soft memory limit -memory-limit asks for (see its
// usage), unless GOMEMLIMIT is set, and returns it in bytes (0 if none
// was set). inMemory is -store mem. Call it once the ledger the process
// generates or loads is in memory, before the fetch begins.
func (p processOptions) limitMemory(inMemory bool) int64 {
	switch {
	case memlimit.FromEnv() || p.memoryLimit == "off" || (p.memoryLimit == "auto" && inMemory):
		return 0
	case p.memoryLimit == "auto":
		return memlimit.SetAboveLive(fetchHeadroomMiB << 20)
	}
	return memlimit.Set(p.limitMiB << 20)
}

// startCPUProfile starts the CPU profile, if asked for; stop ends it.
func (p processOptions) startCPUProfile() (stop func() error, err error) {
	if p.cpuProfile == "" {
		return func() error { return nil }, nil
	}
	stop, err = profile.StartCPU(p.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return stop, nil
}

// heapProfiler writes -memprofile's heap profile once during a fetch: as
// it has verified half the nodes it expects, when it is at its widest
// (the hashes waiting, the requests in flight, the store's memtables and
// level 0 half grown), or, if it never gets there (the count unknown, or
// the fetch cut short), as it ends. Safe for concurrent use.
type heapProfiler struct {
	file    string // "" writes nothing
	warn    func(string)
	written atomic.Bool
}

// progress writes the profile once p shows half the nodes expected
// verified.
func (h *heapProfiler) progress(p fetch.Progress) {
	if p.Expected > 0 && p.Verified*2 >= p.Expected {
		h.write()
	}
}

// end writes the profile unless progress has.
func (h *heapProfiler) end() { h.write() }

func (h *heapProfiler) write() {
	if h.file == "" || h.written.Swap(true) {
		return
	}
	if err := profile.WriteHeap(h.file); err != nil {
		h.warn(fmt.Sprintf("-memprofile: %v", err))
	}
}

package main

import (
	"flag"
	"fmt"

	"github.com/peersched/peersched/xrpl/internal/memlimit"
	"github.com/peersched/peersched/xrpl/internal/profile"
)

// processOptions are the flags about the process itself rather than the
// fetch: its soft memory limit and its profiles.
type processOptions struct {
	memoryLimitMiB int64
	cpuProfile     string
	memProfile     string
}

// defaultMemoryLimitMiB is -memory-limit's default, in MiB. PLACEHOLDER.
const defaultMemoryLimitMiB = 200

func (p *processOptions) register(fs *flag.FlagSet) {
	fs.Int64Var(&p.memoryLimitMiB, "memory-limit", defaultMemoryLimitMiB, "soft limit, in MiB, on the memory the Go runtime manages (heap, stacks; not Pebble's block cache and memtables, which cgo builds allocate in C): past it the garbage collector runs more often instead of letting the heap grow to twice what is live; memory the fetch needs is never refused. 0: no limit. The GOMEMLIMIT environment variable, if set, wins")
	fs.StringVar(&p.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this file, for go tool pprof")
	fs.StringVar(&p.memProfile, "memprofile", "", "write a heap profile to this file when the fetch ends, before its store is merged (with several strategies, the last fetch's), for go tool pprof")
}

// check checks the flags, each error naming its flag.
func (p processOptions) check() error {
	if p.memoryLimitMiB < 0 || p.memoryLimitMiB > 1<<40 {
		return fmt.Errorf("-memory-limit %d: want 0 (no limit) or a size in MiB", p.memoryLimitMiB)
	}
	return nil
}

// start applies the memory limit and starts the CPU profile, if asked
// for; stop ends the profile.
func (p processOptions) start() (stop func() error, err error) {
	memlimit.Set(p.memoryLimitMiB << 20)
	if p.cpuProfile == "" {
		return func() error { return nil }, nil
	}
	stop, err = profile.StartCPU(p.cpuProfile)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return stop, nil
}

// writeHeapProfile writes -memprofile's heap profile, if asked for.
func (p processOptions) writeHeapProfile() error {
	if p.memProfile == "" {
		return nil
	}
	if err := profile.WriteHeap(p.memProfile); err != nil {
		return fmt.Errorf("-memprofile: %w", err)
	}
	return nil
}

package main

import "runtime/debug"

// gcPercent is the collector's GOGC for a simulation, unless the GOGC
// environment variable sets one. Most of a large overlay's heap is its
// fetching nodes' long-lived state (about 55 kB a node at ledger 40000),
// and at the default of 100 the heap grows to twice that between
// collections: with fragmentation and the nodes' goroutine stacks, a
// 10,000-node run peaked at 1.5 GB RSS. At 40 it peaks at 1.11 to 1.14 GB, for a
// few seconds more collecting (BENCHMARKS.md, "The overlay at 10,000
// nodes").
const gcPercent = 40

// tuneGC sets the collector to gcPercent unless getenv("GOGC") says
// otherwise: the runtime has read GOGC already.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

package node

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/peersched/peersched/internal/pinned"
	"github.com/peersched/peersched/internal/race"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// The components experiment (issue 28): one node runs the bulk fetch, a
// stream of lookups and relay over the same sixteen peers, built on one
// scheduler and built the old way, in virtual time from fixed seeds, so
// the table is exact: the test compares it with
// testdata/components.md and checks the targets.
//
// Rerun and print it:
//
//	go test ./xrpl/node -run TestComponentsExperiment -v
//
// and after a deliberate change, rewrite the pinned table with
//
//	go test ./xrpl/node -run TestComponentsExperiment -update-components

var updateComponents = flag.Bool("update-components", false, "rewrite testdata/components.md with this run's table")

const (
	experimentPeers   = 16
	experimentObjects = 200_000
	experimentSeed    = 3
	experimentLookups = 20 // a second
	experimentRelay   = 2  // a second, to every peer
	experimentAlone   = 10 * time.Second
	experimentBudget  = 200 // messages a second
	componentsFile    = "testdata/components.md"
)

// experimentService is every peer's capacity: four workers (a rippled
// peer serves from a pool of job threads), 10ms a request and 50µs an
// object, at most 64 waiting and the rest dropped.
var experimentService = simnet.Service{Workers: 4, PerRequest: 10 * ms, PerObject: 150 * time.Microsecond, QueueLimit: 64, Overflow: simnet.OverflowDrop}

// experimentWorld is the experiment's peers, ledger and keys. The peers'
// latencies spread from 5 to 45ms, as in the capacity experiment, and
// every peer keeps rippled's accounts of the node (the default).
func experimentWorld() world {
	ps := make([]simnet.Profile, experimentPeers)
	for i := range ps {
		base := 10*ms + time.Duration(i*7%experimentPeers)*4*ms
		ps[i] = simnet.Profile{Latency: simnet.Uniform(base, base+10*ms), Service: experimentService}
	}
	l, err := ledger.Generate(experimentSeed, experimentObjects)
	if err != nil {
		panic(err)
	}
	return world{ledger: l, keys: LeafHashes(l, 4096), profiles: ps, seed: experimentSeed}
}

// experimentRuns are the runs of the table, each way.
func experimentRuns() []run {
	var out []run
	for _, way := range []string{WayScheduler, WayOwnPeers} {
		out = append(out,
			run{way: way, fetch: true},
			run{way: way, lookups: experimentLookups, alone: experimentAlone},
			run{way: way, fetch: true, lookups: experimentLookups, relay: experimentRelay},
		)
	}
	return append(out,
		run{way: WayScheduler, fetch: true, lookups: experimentLookups, relay: experimentRelay,
			budget: Budget(experimentBudget, 0)},
		// What each of the others costs the fetch, apart.
		run{way: WayScheduler, fetch: true, lookups: experimentLookups},
		run{way: WayScheduler, fetch: true, relay: experimentRelay},
	)
}

// TestComponentsExperiment runs every setting, checks the targets
// and pins the table.
func TestComponentsExperiment(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("the components experiment runs nine simulated nodes; skipped with -short")
	case race.Enabled:
		t.Skip("the components experiment is slow under -race; run it without: go test ./xrpl/node -run TestComponentsExperiment")
	}
	w := experimentWorld()
	runs := experimentRuns()
	outs := make([]outcome, len(runs))
	for i, r := range runs {
		outs[i] = simulate(t, w, r)
		if r.fetch && (outs[i].err != nil || !outs[i].rep.Complete) {
			t.Errorf("%s, %s: the fetch did not complete: %v", r.way, r.name(), outs[i].err)
		}
	}
	table := experimentTable(runs, outs) + experimentTargets(t, outs)
	t.Log("\n" + table)
	pinned.Check(t, componentsFile, table, *updateComponents, "update-components")
}

// experimentTable renders the runs as the Markdown table EXPERIMENTS.md
// quotes.
func experimentTable(runs []run, outs []outcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d peers (%d workers, %v a request + %v an object, queue of %d; rippled's limits), %d-object ledger, %d lookups/s, relay %d/s to every peer, seed %d, virtual time.\n\n",
		experimentPeers, experimentService.Workers, experimentService.PerRequest, experimentService.PerObject, experimentService.QueueLimit,
		experimentObjects, experimentLookups, experimentRelay, experimentSeed)
	b.WriteString("| node | running | component | priority | requests | done | failed | p50 | p99 | queue mean | queue p99 | throughput | busiest second | peers' warnings / cuts |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, r := range runs {
		o := outs[i]
		for _, c := range o.comps {
			fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %v | %v | %v | %v | %.0f %s | %d | %d / %d |\n",
				r.way, r.name(), c.Name, c.Priority, c.Requests, c.Done, c.Failed,
				round(c.P50), round(c.P99), round(c.QueueMean), round(c.QueueP99), c.Throughput, c.Unit,
				o.busiest, o.warnings, o.cuts)
		}
	}
	return b.String()
}

func round[D ~int64](d D) time.Duration { return time.Duration(d).Round(100 * time.Microsecond) }

// The rows of experimentRuns, by index.
const (
	rowSchedFetch = iota
	rowSchedLookups
	rowSchedAll
	rowOwnFetch
	rowOwnLookups
	rowOwnAll
	rowSchedBudget
	rowSchedFetchLookups
	rowSchedFetchRelay
)

// experimentTargets checks the targets on the runs, failing the
// test for each one missed, and returns the lines that say how each came
// out, for the table; EXPERIMENTS.md says why each comes out as it does.
func experimentTargets(t *testing.T, outs []outcome) string {
	t.Helper()
	var b strings.Builder
	lookupRatio := func(with, alone int) float64 {
		return float64(outs[with].component("lookups").P99) / float64(outs[alone].component("lookups").P99)
	}
	sched, own := lookupRatio(rowSchedAll, rowSchedLookups), lookupRatio(rowOwnAll, rowOwnLookups)
	fmt.Fprintf(&b, "\nLookup p99 with the fetch running over lookup p99 alone: %.2f on the scheduler (target at most 1.5), %.2f with their own peers.\n", sched, own)
	if sched > 1.5 {
		t.Errorf("lookup p99 with the fetch is %.2f times that without, above 1.5", sched)
	}
	fetchRatio := func(with, alone int) float64 {
		return outs[with].rep.Rate / outs[alone].rep.Rate
	}
	fr := fetchRatio(rowSchedAll, rowSchedFetch)
	fmt.Fprintf(&b, "Fetch throughput with lookups and relay over the fetch alone: %.2f %% on the scheduler (target at least 90 %%), %.1f %% with their own peers.\n",
		100*fr, 100*fetchRatio(rowOwnAll, rowOwnFetch))
	// Why the fetch loses what it loses: peers are kept within
	// fetch.RippledRate, and the fetch, sizing its requests to that rate,
	// is held by it. A lookup is a query and costs the peer's rate a
	// query's worth, as the fetch's requests do; a notification declares
	// the trivial fee (NoticeCost), as a rippled peer charges it, so relay
	// leaves the rate to the queries. The runs beside one component each
	// show which costs the fetch what.
	alone, all := outs[rowSchedFetch], outs[rowSchedAll]
	perSecond := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	fmt.Fprintf(&b, "Messages the peers took on the scheduler: the fetch alone %.0f a second; with the others %.0f a second, of which the fetch %.0f, lookups %.0f (a query's worth of the peer's rate each) and relay %.0f (the trivial fee each).\n",
		perSecond(alone.sent, alone.virtual), perSecond(all.sent, all.virtual), perSecond(all.component("fetch").Requests, all.virtual),
		perSecond(all.component("lookups").Requests, all.virtual), perSecond(all.component("relay").Requests, all.virtual))
	fmt.Fprintf(&b, "Fetch throughput beside one of the others, over the fetch alone: %.1f %% beside lookups, %.1f %% beside relay.\n",
		100*fetchRatio(rowSchedFetchLookups, rowSchedFetch), 100*fetchRatio(rowSchedFetchRelay, rowSchedFetch))
	if fr < 0.90 {
		t.Errorf("the fetch kept %.2f%% of its throughput beside lookups and relay, below 90%%", 100*fr)
	}
	bud := outs[rowSchedBudget]
	limit := experimentBudget + int(BudgetBurst(experimentBudget))
	fmt.Fprintf(&b, "Budget of %d messages a second (burst %d): busiest second %d (at most %d); the fetch completed: %v.\n",
		experimentBudget, BudgetBurst(experimentBudget), bud.busiest, limit, bud.rep.Complete)
	if bud.busiest > limit {
		t.Errorf("with a budget of %d/s the busiest second held %d messages, above %d", experimentBudget, bud.busiest, limit)
	}
	lk, rl := bud.component("lookups"), bud.component("relay")
	if lk.QueueP99 > rl.QueueP99 {
		t.Errorf("under the budget lookups waited longer in the queue (p99 %v) than relay (%v): not in priority order", lk.QueueP99, rl.QueueP99)
	}
	return b.String()
}

package fetch

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/peersched/peersched/internal/pinned"
	"github.com/peersched/peersched/internal/race"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/simnet"
)

// The capacity experiment (issue 11 §5): how many requests to keep in flight
// at each peer, when the peers differ tenfold in capacity and the host cannot
// know which is which. Sixteen simulated peers serve the same ledger; four
// have ten workers and twelve have one, all with the same service time per
// request and a bounded queue that drops what it cannot hold. The fetch runs
// through the scheduler with a fixed number of channels per peer (a sweep
// from 1 to 64), with the adaptive limit (limit.Vegas with the default
// bounds, no tuning), and through the fixed peer set it replaces. Everything
// runs in virtual time from fixed seeds, so the table is exact: the test
// compares it with testdata/capacity.md and checks the targets.
//
// Rerun and print it:
//
//	go test ./xrpl/fetch -run TestCapacityExperiment -v
//
// and after a deliberate change, rewrite the pinned table with
//
//	go test ./xrpl/fetch -run TestCapacityExperiment -update-capacity

var updateCapacity = flag.Bool("update-capacity", false, "rewrite testdata/capacity.md with this run's table")

const (
	capacityPeers        = 16
	capacityLarge        = 4  // peers p00..p03 have capacityWorkers workers
	capacityWorkers      = 10 // so a large peer serves ten times what a small one does
	capacitySmallWorkers = 1  // the others
	capacityBatch        = 64
	capacityObjects      = 100_000 // leaves of the generated ledger
	capacityFile         = "testdata/capacity.md"
	capacitySeed         = 5 // the main table's
	capacitySeedsFile    = "testdata/capacity_seeds.md"
)

// capacityService is every peer's service, but for the large peers'
// workers: 30ms per request and 100µs per object, so a full batch takes
// capacityServiceTime, and at most 32 requests wait; more are dropped,
// unanswered. The cost is mostly per request (a lookup, a job queue, a
// reply to build), so a request for one object costs almost what a full
// batch does: a limiter's RTT floor, set by whatever answer came back
// fastest, is then the floor of full batches too. (With a cost mostly per
// object, the first small requests of the walk set a floor that full
// batches never reach, and Vegas reads the difference as a queue.)
var capacityService = simnet.Service{
	Workers:    capacitySmallWorkers,
	PerRequest: capacityPerRequest,
	PerObject:  capacityPerObject,
	QueueLimit: 32,
	Overflow:   simnet.OverflowDrop,
}

// capacityServiceTime is the unloaded service time of a full batch: the
// yardstick of the queueing-delay target.
const capacityServiceTime = capacityPerRequest + capacityBatch*capacityPerObject

const (
	capacityPerRequest = 30 * ms
	capacityPerObject  = 100 * time.Microsecond
)

// capacityProfiles returns the sixteen peers. Their latencies differ too (the
// one-way base spreads from 5 to 35ms, with 10ms of jitter), and do not line
// up with capacity: a large peer is not always a near one.
func capacityProfiles() []simnet.Profile {
	ps := make([]simnet.Profile, capacityPeers)
	for i := range ps {
		svc := capacityService
		if i < capacityLarge {
			svc.Workers = capacityWorkers
		}
		base := 5*ms + time.Duration(i*7%capacityPeers)*2*ms
		ps[i] = simnet.Profile{Latency: simnet.Uniform(base, base+10*ms), Service: svc}
	}
	return ps
}

// capacitySetting is one way to run the fetch.
type capacitySetting struct {
	name     string
	strategy string
	channels int           // fixed channels per peer (and the peer set's)
	limits   *peer.Options // adaptive, if set
}

func capacitySettings() []capacitySetting {
	var out []capacitySetting
	for _, n := range []int{1, 2, 4, 8, 16, 32, 64} {
		out = append(out, capacitySetting{name: fmt.Sprintf("fixed %d", n), strategy: "scheduler", channels: n})
	}
	return append(out,
		capacitySetting{name: "adaptive (Vegas, default bounds)", strategy: "scheduler", limits: &peer.Options{}},
		capacitySetting{name: "peer set (2 peers at a time, 4 channels)", strategy: "peerset", channels: 4})
}

// capacityRow is what one setting measured.
type capacityRow struct {
	setting capacitySetting
	rate    float64       // verified objects per virtual second
	virtual time.Duration // the fetch's virtual duration
	// p50 and p99 are the median and 99th percentile queueing delay of the
	// requests that reached a peer after the warm-up, at the peer where
	// p99 is worst, worst.
	p50, p99 time.Duration
	worst    string
	// longest is the longest any request waited at any peer, warm-up
	// included.
	longest time.Duration
	// smallLimits and largeLimits are the range of the small and the large
	// peers' limits at the end (the scheduler only).
	smallLimits, largeLimits [2]int
	timeouts                 int
	dropped                  int // requests the peers' full queues dropped
}

// capacityWarmUp is how long the experiment lets the adaptive limits find
// the peers' capacities before it measures queueing delays: a few rounds
// of slow start, at the peers' round trips of 40 to 80ms. Vegas learns a
// peer's capacity by exceeding it for a round, so the requests of that
// round wait longer; the longest wait of the whole fetch, warm-up included,
// is reported beside the quantiles.
const capacityWarmUp = 500 * ms

// runCapacity runs the fetch once with setting s and the network's seed.
func runCapacity(t *testing.T, s capacitySetting, seed uint64) capacityRow {
	t.Helper()
	o := runSim(t, sim{
		strategy: s.strategy,
		ledger:   capacityLedger,
		peers:    capacityProfiles(),
		channels: s.channels,
		limits:   s.limits,
		seed:     seed,
		warmUp:   capacityWarmUp,
		cfg:      Config{Batch: capacityBatch, ProgressEvery: 100 * ms},
	})
	mustComplete(t, o, capacityLedger)
	row := capacityRow{setting: s, virtual: o.virtual, timeouts: o.rep.Timeouts,
		rate: float64(o.rep.Objects) / o.virtual.Seconds()}
	for i := range capacityPeers {
		id := simID(i)
		row.dropped += o.peers[id].Overflowed
		all := o.queueDelays[id]
		row.longest = max(row.longest, simnet.Quantile(all, 1))
		d := all[o.warmUpServed[id]:]
		if p99 := simnet.Quantile(d, 0.99); p99 > row.p99 || row.worst == "" {
			row.p99, row.p50, row.worst = p99, simnet.Quantile(d, 0.5), string(id)
		}
		if l, ok := o.limits[id]; ok {
			r := &row.smallLimits
			if i < capacityLarge {
				r = &row.largeLimits
			}
			if r[0] == 0 || l < r[0] {
				r[0] = l
			}
			r[1] = max(r[1], l)
		}
	}
	return row
}

// capacityLedger is the experiment's ledger: big enough that the fetch
// spends most of its time at full width, not in the walk's first levels.
var capacityLedger = mustGenerate(11, capacityObjects)

// TestCapacityExperiment runs every setting, checks the targets and
// that fixed 64 overloads the small peers, and compares the table with the
// pinned one.
func TestCapacityExperiment(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("the capacity experiment runs nine fetches of a 138,559-node ledger; skipped with -short")
	case race.Enabled:
		// Its outcome is exact and its code runs under -race in the other
		// simulated fetches; .ci/run runs it without -race.
		t.Skip("the capacity experiment takes about 6 minutes under -race; run it without: go test ./xrpl/fetch -run TestCapacityExperiment")
	}
	var rows []capacityRow
	for _, s := range capacitySettings() {
		rows = append(rows, runCapacity(t, s, capacitySeed))
	}
	table := capacityTable(rows)
	t.Log("\n" + table)

	best, adaptive, fixed64 := bestFixed(rows), rowNamed(t, rows, "adaptive"), rowNamed(t, rows, "fixed 64")
	if adaptive.rate < 0.95*best.rate {
		t.Errorf("adaptive fetched %.0f objects/s, below 95%% of the best fixed setting (%s: %.0f)", adaptive.rate, best.setting.name, best.rate)
	}
	// The target: every peer's p99 at most twice its unloaded
	// service time. Vegas holds half a request to one and a half queued
	// (Alpha, Beta), which at a one-worker peer is at most one and a half
	// service times of waiting, and arrivals' jitter the rest.
	if adaptive.p99 > 2*capacityServiceTime {
		t.Errorf("adaptive: peer %s's p99 queueing delay after the warm-up is %v, above twice its unloaded service time (%v)", adaptive.worst, adaptive.p99, capacityServiceTime)
	}
	if fixed64.p99 <= 5*capacityServiceTime || fixed64.dropped == 0 || fixed64.timeouts == 0 {
		t.Errorf("fixed 64 did not overload the small peers (worst p99 %v, %d dropped): the scenario shows nothing", fixed64.p99, fixed64.dropped)
	}

	pinned.Check(t, capacityFile, table, *updateCapacity, "update-capacity")
}

// capacitySweepSeeds are the network seeds of TestCapacitySeeds.
const capacitySweepSeeds = 10

// TestCapacitySeeds reruns the capacity experiment's sweep of fixed settings
// and the adaptive one at ten network seeds, so that the main table's seed is
// seen to be no lucky draw. It checks the delay target at every seed and
// pins the table in testdata/capacity_seeds.md. Its throughput bound is
// looser than the 95%, which the main table's seed checks: the
// sweep guards against a regression at any seed without pinning the target
// to all ten (BENCHMARKS.md quotes the table; issue 11 measured one seed
// at 93.8%).
func TestCapacitySeeds(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("the capacity sweep runs eighty fetches of a 138,559-node ledger; skipped with -short")
	case race.Enabled:
		t.Skip("the capacity sweep takes many minutes under -race; run it without: go test ./xrpl/fetch -run TestCapacitySeeds")
	}
	var b strings.Builder
	b.WriteString("| seed | best fixed | its objects/s | adaptive objects/s | vs best fixed | adaptive p99 queueing delay, worst peer | × service time |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|\n")
	for seed := uint64(1); seed <= capacitySweepSeeds; seed++ {
		var rows []capacityRow
		for _, s := range capacitySettings() {
			if s.strategy == "scheduler" {
				rows = append(rows, runCapacity(t, s, seed))
			}
		}
		best, adaptive := bestFixed(rows), rowNamed(t, rows, "adaptive")
		ratio := adaptive.rate / best.rate
		delay := float64(adaptive.p99) / float64(capacityServiceTime)
		fmt.Fprintf(&b, "| %d | %s | %.0f | %.0f | %.1f %% | %v (%s) | %.2f |\n", seed, best.setting.name, best.rate, adaptive.rate,
			100*ratio, adaptive.p99.Round(100*time.Microsecond), adaptive.worst, delay)
		if delay > 2 {
			t.Errorf("seed %d: adaptive's p99 queueing delay at %s is %.2f times the service time, above 2", seed, adaptive.worst, delay)
		}
		if ratio < 0.9 {
			t.Errorf("seed %d: adaptive fetched %.1f%% of the best fixed setting's throughput, below 90%%", seed, 100*ratio)
		}
	}
	table := b.String()
	t.Log("\n" + table)
	pinned.Check(t, capacitySeedsFile, table, *updateCapacity, "update-capacity")
}

// bestFixed returns the fixed setting that fetched fastest.
func bestFixed(rows []capacityRow) capacityRow {
	var best capacityRow
	for _, r := range rows {
		if strings.HasPrefix(r.setting.name, "fixed ") && r.rate > best.rate {
			best = r
		}
	}
	return best
}

func rowNamed(t *testing.T, rows []capacityRow, prefix string) capacityRow {
	t.Helper()
	for _, r := range rows {
		if r.setting.name == prefix || strings.HasPrefix(r.setting.name, prefix+" ") {
			return r
		}
	}
	t.Fatalf("no setting %q", prefix)
	return capacityRow{}
}

// capacityTable renders rows as the Markdown table that BENCHMARKS.md
// quotes, throughput relative to the best fixed setting.
func capacityTable(rows []capacityRow) string {
	best := bestFixed(rows)
	var b strings.Builder
	fmt.Fprintf(&b, "%d peers (%d with %d workers, %d with 1; %v per full batch; queue of %d, drops beyond), %d-object ledger, batch %d, seed %d, virtual time.\n\n",
		capacityPeers, capacityLarge, capacityWorkers, capacityPeers-capacityLarge, capacityServiceTime, capacityService.QueueLimit,
		capacityLedger.Len(), capacityBatch, capacitySeed)
	b.WriteString("| setting | objects/s | vs best fixed | fetch time | queueing delay after warm-up, worst peer: p50 / p99 | longest wait | limits at the end: small / large peers | timeouts | dropped by full queues |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		limits := "–"
		if r.smallLimits[0] > 0 {
			limits = fmt.Sprintf("%s / %s", span(r.smallLimits), span(r.largeLimits))
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.1f %% | %v | %v / %v (%s) | %v | %s | %d | %d |\n",
			r.setting.name, r.rate, 100*r.rate/best.rate, r.virtual, r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.worst,
			r.longest.Round(100*time.Microsecond), limits, r.timeouts, r.dropped)
	}
	fmt.Fprintf(&b, "\nBest fixed setting: %s. Target for every peer's p99 queueing delay: at most %v (twice the unloaded service time). Warm-up: the first %v.\n",
		best.setting.name, 2*capacityServiceTime, capacityWarmUp)
	return b.String()
}

// span renders a range of limits: "3" or "3–4".
func span(r [2]int) string {
	if r[0] == r[1] {
		return fmt.Sprint(r[0])
	}
	return fmt.Sprintf("%d–%d", r[0], r[1])
}

package simnet_test

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/internal/pinned"
	"github.com/peersched/peersched/internal/race"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/timeouts"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// The tail experiment (issue 12 §5): how much hedging cuts the tail of
// request completion times, and for how many extra requests. Sixteen
// simulated peers answer after a heavy-tailed latency: a log-normal body
// (median 20ms, sigma 0.5) and 1% of responses 50 times slower, as a peer
// stalled on a collection or a disk. An open stream of requests, one a
// millisecond, goes through the scheduler, each on the best channel
// offered; a request that fails is sent again until it is answered, and
// its completion time runs from its issue to its answer. Three settings:
// a fixed timeout (timeouts.Fixed, 1s, RFC 6298's initial RTO), adaptive
// timeouts (timeouts.Estimator's defaults), and adaptive timeouts with hedging
// (hedge.Hedger with the default budget, 5% after a burst of 10, at each
// request's soft deadline from the same Estimator). Everything runs in
// virtual time from a fixed seed, so the table is exact: the test
// compares it with testdata/tail.md and checks the target.
//
// The workload is a stream of single requests rather than a ledger fetch:
// the fetch hedges only at its end, by design (while hashes wait, a hedge
// would take a channel from work and spend the budget where it buys
// nothing), and its requests are batches whose completion also waits for
// the fetch's own batching; a stream measures each request's completion
// time as the library gives it.
//
// Rerun and print it:
//
//	go test ./xrpl/simnet -run TestTailExperiment -v
//
// and after a deliberate change, rewrite the pinned table with
//
//	go test ./xrpl/simnet -run TestTailExperiment -update-tail

var updateTail = flag.Bool("update-tail", false, "rewrite testdata/tail.md with this run's table")

const (
	tailPeers     = 16
	tailChannels  = 8 // per peer: the stream needs about 40 in all
	tailRequests  = 100_000
	tailEvery     = time.Millisecond // one request issued per step
	tailSeed      = 12
	tailFile      = "testdata/tail.md"
	tailSeedsFile = "testdata/tail_seeds.md"
	tailFixed     = time.Second
	// tailExtraAllowed is the target's cap on extra requests.
	tailExtraAllowed = 0.05
)

// tailLatency is every peer's: the log-normal body and its stragglers.
var tailLatency = simnet.LogNormal(20*time.Millisecond, 0.5).WithStragglers(0.01, 50)

// tailLedger is what the peers serve; every request asks for its root.
var tailLedger = func() *ledger.Ledger {
	l, err := ledger.Generate(1, 16)
	if err != nil {
		panic(err)
	}
	return l
}()

// tailP99Floor is the lowest p99 that any policy sending at most
// tailExtraAllowed extra requests can expect on tailLatency: the
// latency's (0.99 − tailExtraAllowed) quantile. At least 95% of requests
// are sent once and are answered no sooner than their one response takes,
// so if a share Above(d) of responses take longer than d, at least
// Above(d) − 5% of requests finish after d; p99 <= d needs Above(d) <= 6%.
// Retries count against the same 5%, and queueing only adds.
var tailP99Floor = tailLatency.Percentile(0.99 - tailExtraAllowed)

// tailSetting is one way to run the stream.
type tailSetting struct {
	name   string
	policy func() timeouts.Policy
	hedged bool
}

// tailSettings are the experiment's settings. Hedging runs twice: with
// the estimator's default soft deadline, SRTT + 2·RTTVAR (p95-like), and
// with the soft deadline four deviations out
// (timeouts.EstimatorConfig.SoftDeviations), which the target is checked on
// (see BENCHMARKS.md for why).
func tailSettings() []tailSetting {
	adaptive := func(soft int) func() timeouts.Policy {
		return func() timeouts.Policy {
			e, err := timeouts.NewEstimator(timeouts.EstimatorConfig{SoftDeviations: soft})
			if err != nil {
				panic(err)
			}
			return e
		}
	}
	return []tailSetting{
		{name: fmt.Sprintf("fixed timeout (%v)", tailFixed), policy: func() timeouts.Policy { return timeouts.Fixed{Hard: tailFixed} }},
		{name: "adaptive timeouts (estimator defaults)", policy: adaptive(0)},
		{name: "adaptive + hedging, soft SRTT+2·RTTVAR (default)", policy: adaptive(0), hedged: true},
		{name: "adaptive + hedging, soft SRTT+4·RTTVAR", policy: adaptive(4), hedged: true},
	}
}

// tailRow is what one setting measured.
type tailRow struct {
	setting          tailSetting
	p50, p99, p999   time.Duration
	max              time.Duration
	sent             uint64 // requests the host accepted: first sends, retries and hedges
	timeouts         uint64 // requests that reached their hard deadline (scheduler's count)
	hedges, hedgeWon uint64
}

// extra is the share of requests sent beyond one per request issued.
func (r tailRow) extra() float64 {
	return float64(r.sent-tailRequests) / tailRequests
}

// tailWorld is one run's stream: its requests' policy, the Hedger if it
// hedges, and their completion times.
type tailWorld struct {
	clk    *clock.Mock
	sched  *scheduler.Scheduler
	hedger *hedge.Hedger // nil without hedging

	mu          sync.Mutex
	policy      timeouts.Policy // guarded by mu
	completions []time.Duration
}

// tailRequest is one request of the stream, a sender while it waits for a
// channel and the receiver of its current attempt.
type tailRequest struct {
	w      *tailWorld
	issued time.Time
	// The current attempt, guarded by w.mu.
	to, hedgedTo     peer.ID
	sentAt, hedgedAt time.Time
}

var tailMessage = ledger.GetObjects{Hashes: []ledger.Hash{tailLedger.Root()}}

func (r *tailRequest) OnOffer(o offer.Offer) {
	ch, ok := o.Channel(0) // the best channel offered
	if !ok {
		return
	}
	w := r.w
	w.mu.Lock()
	soft, hard := w.policy.Deadlines(ch.Peer)
	r.to, r.hedgedTo, r.sentAt = ch.Peer, "", w.clk.Now()
	w.mu.Unlock()
	if w.hedger != nil {
		_, _ = w.hedger.Request(o, 0, tailMessage, r, soft, hard)
	} else {
		_, _ = o.Request(0, tailMessage, r, hard)
	}
	// On an error the request stays in the queue, offered again.
}

func (*tailRequest) OnDiscard() {}

func (r *tailRequest) OnResponse(_ peer.RequestID, from peer.ID, _ any) {
	w := r.w
	now := w.clk.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	rtt := now.Sub(r.sentAt)
	if r.hedgedTo != "" && from == r.hedgedTo {
		rtt = now.Sub(r.hedgedAt)
	}
	w.policy.Observe(from, rtt)
	w.completions = append(w.completions, now.Sub(r.issued))
}

func (r *tailRequest) OnFailure(_ peer.RequestID, from peer.ID, reason receiver.Reason) {
	w := r.w
	w.mu.Lock()
	if reason == receiver.Timeout {
		w.policy.Expired(from)
	}
	w.mu.Unlock()
	_, _ = w.sched.Schedule(r, 0) // again, until answered
}

// tailRequest is a hedge.Receiver, so that the Hedger tells it where each
// hedge went (its answer's RTT runs from the hedge's send). The assertion
// keeps it one: with another signature the Hedger would silently treat it
// as a plain receiver, as it did for a while after hedge.CallID came in.
var _ hedge.Receiver = (*tailRequest)(nil)

func (*tailRequest) WantHedge(hedge.CallID, peer.ID) bool { return true }

func (r *tailRequest) OnHedge(_ hedge.CallID, to peer.ID) {
	w := r.w
	w.mu.Lock()
	defer w.mu.Unlock()
	r.hedgedTo, r.hedgedAt = to, w.clk.Now()
}

// runTail runs the stream once with setting s and the network's seed.
func runTail(t *testing.T, s tailSetting, seed uint64) tailRow {
	t.Helper()
	row := tailRow{setting: s}
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		// A rank seed from the network's, so the run replays exactly.
		sched, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true, RankSeed: seed + 1})
		if err != nil {
			t.Fatal(err)
		}
		w := &tailWorld{clk: clk, sched: sched, policy: s.policy()}
		if s.hedged {
			if w.hedger, err = hedge.NewHedger(sched, nil, hedge.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		net, err := simnet.New(simnet.Config{
			Ledger:  tailLedger,
			Clock:   clk,
			Seed:    seed,
			Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = sched.Deliver(from, id, r) },
		})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tailPeers {
			p, err := net.AddPeer(peer.ID(fmt.Sprintf("p%02d", i)), simnet.Profile{Latency: tailLatency})
			if err != nil {
				t.Fatal(err)
			}
			if err := sched.Connect(p, tailChannels); err != nil {
				t.Fatal(err)
			}
		}
		for issued := 0; ; {
			if issued < tailRequests {
				if _, err := sched.Schedule(&tailRequest{w: w, issued: clk.Now()}, 0); err != nil {
					t.Fatal(err)
				}
				issued++
			}
			synctest.Wait()
			w.mu.Lock()
			done := len(w.completions)
			w.mu.Unlock()
			if done == tailRequests {
				break
			}
			clk.Add(tailEvery)
		}
		st := sched.Stats()
		row.sent, row.timeouts = st.Sent, st.TimedOut
		if w.hedger != nil {
			hs := w.hedger.Stats()
			row.hedges, row.hedgeWon = hs.Hedges, hs.HedgeWins
		}
		row.p50 = simnet.Quantile(w.completions, 0.5)
		row.p99 = simnet.Quantile(w.completions, 0.99)
		row.p999 = simnet.Quantile(w.completions, 0.999)
		row.max = simnet.Quantile(w.completions, 1)
		net.Close()
		if err := sched.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
	return row
}

// TestTailExperiment runs every setting, checks the target on hedging with
// the soft deadline four deviations out (p99.9 at least five times below
// the fixed timeout's, for at most 5% extra requests; p99 below both
// settings without hedging), and compares the table with the pinned one.
func TestTailExperiment(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("the tail experiment runs four streams of 100,000 requests; skipped with -short")
	case race.Enabled:
		// Its outcome is exact, and the Hedger's code runs under -race in
		// the package's other tests.
		t.Skip("the tail experiment is slow under -race; run it without: go test ./xrpl/simnet -run TestTailExperiment")
	}
	var rows []tailRow
	for _, s := range tailSettings() {
		rows = append(rows, runTail(t, s, tailSeed))
	}
	table := tailTable(rows)
	t.Log("\n" + table)

	fixed, adaptive, hedged := rows[0], rows[1], rows[3]
	if hedged.p999*5 > fixed.p999 {
		t.Errorf("hedging's p99.9 is %v, not 5 times below the fixed timeout's %v", hedged.p999, fixed.p999)
	}
	if hedged.extra() > tailExtraAllowed {
		t.Errorf("hedging sent %.2f%% extra requests, above 5%%", 100*hedged.extra())
	}
	if hedged.p99 < tailP99Floor {
		t.Errorf("hedging's p99 %v is below %v, the floor no policy within the extra-request cap can beat: the floor's argument or the experiment is wrong", hedged.p99, tailP99Floor)
	}
	if hedged.p99 >= min(fixed.p99, adaptive.p99) || hedged.p999 >= adaptive.p999 {
		t.Errorf("hedging's p99 and p99.9 (%v, %v) are not below the other settings' (%v and %v; %v)",
			hedged.p99, hedged.p999, fixed.p99, adaptive.p99, adaptive.p999)
	}
	pinned.Check(t, tailFile, table, *updateTail, "update-tail")
}

// tailSweepSeeds are the network seeds of TestTailSeeds.
const tailSweepSeeds = 10

// TestTailSeeds reruns the fixed timeout and hedging (soft deadline four
// deviations out) at ten network seeds, so that the main table's seed is
// seen to be no lucky draw, checks the p99.9 and extra-request targets at
// each, and pins the table in testdata/tail_seeds.md. It shows, too, how
// far the fixed timeout's p99 moves from seed to seed (see BENCHMARKS.md).
func TestTailSeeds(t *testing.T) {
	switch {
	case testing.Short():
		t.Skip("the tail sweep runs twenty streams of 100,000 requests; skipped with -short")
	case race.Enabled:
		t.Skip("the tail sweep is slow under -race; run it without: go test ./xrpl/simnet -run TestTailSeeds")
	}
	settings := tailSettings()
	fixedSetting, hedgedSetting := settings[0], settings[3]
	var b strings.Builder
	fmt.Fprintf(&b, "p99 floor for any policy with at most %.0f %% extra requests: %v.\n\n", 100*tailExtraAllowed, tailP99Floor.Round(100*time.Microsecond))
	b.WriteString("| seed | fixed timeout: p99 / p99.9 | hedging: p99 / p99.9 | p99 ratio | best p99 ratio possible | p99.9 ratio | hedging's extra requests |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|\n")
	for seed := uint64(1); seed <= tailSweepSeeds; seed++ {
		fixed, hedged := runTail(t, fixedSetting, seed), runTail(t, hedgedSetting, seed)
		fmt.Fprintf(&b, "| %d | %v / %v | %v / %v | %.1f× | %.1f× | %.1f× | %.2f %% |\n", seed,
			fixed.p99.Round(100*time.Microsecond), fixed.p999.Round(100*time.Microsecond),
			hedged.p99.Round(100*time.Microsecond), hedged.p999.Round(100*time.Microsecond),
			float64(fixed.p99)/float64(hedged.p99), float64(fixed.p99)/float64(tailP99Floor),
			float64(fixed.p999)/float64(hedged.p999), 100*hedged.extra())
		if hedged.p999*5 > fixed.p999 || hedged.extra() > tailExtraAllowed || hedged.p99 < tailP99Floor {
			t.Errorf("seed %d: hedging's p99.9 %v against the fixed timeout's %v, %.2f%% extra requests", seed, hedged.p999, fixed.p999, 100*hedged.extra())
		}
	}
	table := b.String()
	t.Log("\n" + table)
	pinned.Check(t, tailSeedsFile, table, *updateTail, "update-tail")
}

// tailTable renders rows as the Markdown table that BENCHMARKS.md quotes.
func tailTable(rows []tailRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d peers, %d channels each, latency %v; %d requests, one every %v, each sent again until answered; seed %d, virtual time.\n\n",
		tailPeers, tailChannels, tailLatency, tailRequests, tailEvery, tailSeed)
	b.WriteString("| setting | p50 | p99 | p99.9 | max | requests sent | extra | timeouts | hedges (won) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		hedges := "–"
		if r.setting.hedged {
			hedges = fmt.Sprintf("%d (%d)", r.hedges, r.hedgeWon)
		}
		fmt.Fprintf(&b, "| %s | %v | %v | %v | %v | %d | %.2f %% | %d | %s |\n", r.setting.name,
			r.p50.Round(100*time.Microsecond), r.p99.Round(100*time.Microsecond), r.p999.Round(100*time.Microsecond), r.max.Round(100*time.Microsecond),
			r.sent, 100*r.extra(), r.timeouts, hedges)
	}
	fixed, adaptive, hedged := rows[0], rows[1], rows[3]
	fmt.Fprintf(&b, "\nHedging with the soft deadline four deviations out: p99 %.1f× below the fixed timeout's and %.1f× below adaptive timeouts' alone; p99.9 %.1f× and %.1f×.\n",
		float64(fixed.p99)/float64(hedged.p99), float64(adaptive.p99)/float64(hedged.p99),
		float64(fixed.p999)/float64(hedged.p999), float64(adaptive.p999)/float64(hedged.p999))
	fmt.Fprintf(&b, "\nNo policy sending at most %.0f %% extra requests can expect a p99 below %v, the latency's %.0fth percentile (at least %.0f %% of requests are sent once); against the fixed timeout's p99 that is at most %.1f× at this seed.\n",
		100*tailExtraAllowed, tailP99Floor.Round(100*time.Microsecond), 100*(0.99-tailExtraAllowed), 100*(1-tailExtraAllowed),
		float64(fixed.p99)/float64(tailP99Floor))
	return b.String()
}

package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/internal/fixtures"
	"github.com/peersched/peersched/xrpl/overlay"
	"github.com/peersched/peersched/xrpl/simnet"
)

// options is the parsed command line.
type options struct {
	cfg        overlay.Config // without its Ledger
	strategies []overlay.Strategy
	ledger     string // a real ledger file; "" with generated
	generated  int    // leaves of a generated ledger instead; 0: use ledger
	json       bool
	svg        string
	// fallback, when not "", says why the default real ledger could not be
	// used and a generated one is fetched instead: run prints it on stderr.
	fallback string
}

// fallbackLeaves is the size of the generated ledger fetched when the default
// real ledger is absent: ledger 40000's state holds 261 entries, so the
// fallback costs about what the default does.
const fallbackLeaves = 261

// errUsage marks errors in the command line; run exits with 2 for them.
var errUsage = errors.New("usage")

// parseOptions parses args. Errors wrap errUsage and name the flag; -h
// prints the usage to stderr and returns flag.ErrHelp.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var strategies, overflow, peerLimits string
	var minLatency, maxLatency time.Duration
	svc := overlay.DefaultService
	fs := flag.NewFlagSet("overlaysim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `overlaysim simulates an overlay of nodes that all fetch the same new ledger
from their neighbours, a few seeders holding it at the start, in virtual time
and deterministically from -seed. Each fetching node runs its own scheduler
and fetch (or the peer set they replace, or rippled's own acquisition);
every node serves what it holds, partial subtrees included, through a
service queue of finite capacity. It
prints, per strategy, when 50%, 99% and 100% of the fetching nodes held the
verified ledger, the load on the serving nodes, traffic and fairness.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.cfg.Nodes, "nodes", 1000, "nodes in the overlay, seeders included")
	fs.IntVar(&o.cfg.Degree, "degree", 8, "neighbours of each node in the random graph (a few may end one or two short)")
	fs.IntVar(&o.cfg.Seeders, "seeders", overlay.DefaultSeeders, "nodes holding the ledger at the start (unset: at most -nodes - 1)")
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "seed of the graph, the latencies, the seeders and the schedulers' rankings")
	fs.StringVar(&strategies, "strategy", "all", "strategies to run, comma-separated: scheduler (adaptive limits), fixed, peerset, rippled (rippled's own acquisition: 5 neighbours, 3 more after each 3s without progress, 12 hashes a request blind and 128 after a useful reply, one request per neighbour at a time; -channels and -batch do not apply); or all")
	fs.IntVar(&o.cfg.Channels, "channels", overlay.DefaultChannels, "channels per neighbour for the fixed and peerset strategies")
	fs.IntVar(&o.cfg.Batch, "batch", fetch.DefaultBatch, "hashes per request")
	fs.StringVar(&o.ledger, "ledger", "", "the real ledger to fetch, a JSON file (default: xrpl-40000.json in ../shared/ledgers beside the repository; where it is absent, a generated ledger of 261 leaves)")
	fs.IntVar(&o.generated, "generated", 0, "fetch a generated ledger of this many leaves instead of a real one")
	fs.IntVar(&svc.Workers, "workers", svc.Workers, "requests each node serves at once")
	fs.DurationVar(&svc.PerRequest, "per-request", svc.PerRequest, "service time of each request")
	fs.DurationVar(&svc.PerObject, "per-object", svc.PerObject, "service time each requested object adds")
	fs.IntVar(&svc.QueueLimit, "queue", svc.QueueLimit, "requests that may wait at a node; more overflow (0: unbounded)")
	fs.StringVar(&overflow, "overflow", "drop", "what a full queue does with a request: drop (unanswered) or reject (refused at once)")
	fs.DurationVar(&minLatency, "min-latency", overlay.DefaultMinLatency, "shortest one-way link latency")
	fs.DurationVar(&maxLatency, "max-latency", overlay.DefaultMaxLatency, "longest one-way link latency")
	fs.DurationVar(&o.cfg.TimeLimit, "time-limit", overlay.DefaultTimeLimit, "virtual time after which fetches still running count as incomplete")
	fs.StringVar(&peerLimits, "peer-limits", "on", "on: every node limits its neighbours as a rippled peer does (fees per query, a warning at a balance of 5,000, a cut at 25,000 and refused redials, queries dropped while 192 answers are queued); off: no cuts, refused redials or dropped queries; warnings and balances are still counted, to compare")
	fs.BoolVar(&o.json, "json", false, "print the results as JSON instead of tables")
	fs.StringVar(&o.svg, "svg", "", "write the completion curves to this SVG file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	bad := func(format string, args ...any) (options, error) {
		return o, fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q: every setting is a flag (see -h)", fs.Arg(0))
	}
	c := &o.cfg
	seedersSet := false
	fs.Visit(func(f *flag.Flag) { seedersSet = seedersSet || f.Name == "seeders" })
	if !seedersSet {
		c.Seeders = 0 // the overlay's default, which a small overlay caps at Nodes-1
	}
	switch {
	case c.Nodes < 3:
		return bad("-nodes %d: want at least 3", c.Nodes)
	case c.Degree < 2 || c.Degree >= c.Nodes:
		return bad("-degree %d: want at least 2 and below -nodes (%d)", c.Degree, c.Nodes)
	case seedersSet && (c.Seeders < 1 || c.Seeders >= c.Nodes):
		return bad("-seeders %d: want at least 1 and below -nodes (%d)", c.Seeders, c.Nodes)
	case c.Channels < 1:
		return bad("-channels %d: want at least 1", c.Channels)
	case c.Batch < 1 || c.Batch > fetch.MaxBatch:
		return bad("-batch %d: want 1 to %d", c.Batch, fetch.MaxBatch)
	case o.generated < 0:
		return bad("-generated %d: want a number of leaves, at least 1", o.generated)
	case o.generated > 0 && o.ledger != "":
		return bad("-generated and -ledger: choose one ledger")
	case svc.Workers < 1 || svc.Workers > simnet.MaxWorkers:
		return bad("-workers %d: want 1 to %d", svc.Workers, simnet.MaxWorkers)
	case svc.PerRequest < 0:
		return bad("-per-request %v: want 0 or more", svc.PerRequest)
	case svc.PerObject < 0:
		return bad("-per-object %v: want 0 or more", svc.PerObject)
	case svc.QueueLimit < 0:
		return bad("-queue %d: want 0 (unbounded) or more", svc.QueueLimit)
	case minLatency < 0:
		return bad("-min-latency %v: want 0 or more", minLatency)
	case maxLatency < minLatency:
		return bad("-max-latency %v: want at least -min-latency (%v)", maxLatency, minLatency)
	case maxLatency == 0:
		return bad("-max-latency 0: want a positive latency")
	case c.TimeLimit <= 0:
		return bad("-time-limit %v: want a positive duration", c.TimeLimit)
	}
	switch peerLimits {
	case "on":
	case "off":
		c.LimitsOff = true
	default:
		return bad("-peer-limits %q: want on or off", peerLimits)
	}
	switch overflow {
	case "drop":
		svc.Overflow = simnet.OverflowDrop
	case "reject":
		svc.Overflow = simnet.OverflowReject
	default:
		return bad("-overflow %q: want drop or reject", overflow)
	}
	c.Service, c.MinLatency, c.MaxLatency = svc, minLatency, maxLatency
	if strategies == "all" {
		o.strategies = overlay.Strategies
	} else {
		for _, name := range strings.Split(strategies, ",") {
			st := overlay.Strategy(strings.TrimSpace(name))
			known := false
			for _, k := range overlay.Strategies {
				known = known || st == k
			}
			if !known {
				return bad("-strategy %q: want scheduler, fixed, peerset, rippled (comma-separated) or all", name)
			}
			o.strategies = append(o.strategies, st)
		}
	}
	if o.generated == 0 && o.ledger == "" {
		o.ledger, o.fallback = defaultLedger()
		if o.fallback != "" {
			o.generated = fallbackLeaves
		}
	}
	return o, nil
}

// defaultLedger returns the path of the default real ledger, or, where it
// cannot be had (outside the repository, or a clone with no ../shared/ledgers
// beside it), "" and why, so that the command fetches a generated ledger
// instead of failing.
func defaultLedger() (path, fallback string) {
	dir, err := fixtures.Dir()
	if err != nil {
		return "", fmt.Sprintf("no real ledger (%v)", err)
	}
	path = filepath.Join(dir, fixtures.Ledger40000)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Sprintf("no real ledger at %s", path)
	}
	return path, ""
}

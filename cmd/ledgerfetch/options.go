package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peersched/peersched/ledger"
)

// options are the command line, parsed and checked.
type options struct {
	objects   int
	peers     int
	channels  int
	batch     int
	latency   latencySpec
	loss      float64
	chaos     bool
	misbehave int
	transport string // "tcp" or "mem"
	seed      uint64
	json      bool
	strategy  []string // "scheduler", "peerset", in the order to run
	connect   []string // external peers' addresses
	timeout   time.Duration
	stall     time.Duration
	wait      time.Duration // for the peers to connect before the fetch starts
	ledger    string        // a real ledger file to serve and fetch, instead of a generated one
	base      string        // a real ledger file the fetch starts from (incremental)
	store     string        // the node store's directory; "" for a temporary one
	root      ledger.Hash   // with -connect: the peers' root, instead of generating the ledger
	expect    int           // with -root: the ledger's node count, if known
}

// errUsage marks errors in the command line; run exits with 2 for them.
var errUsage = errors.New("usage")

// parseOptions parses args. Errors wrap errUsage; -h prints the usage to
// stderr and returns flag.ErrHelp.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var latency, strategy, connect, root string
	fs := flag.NewFlagSet("ledgerfetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `ledgerfetch downloads a whole ledger from its root hash through the peersched
scheduler, checking every object against its hash, and reports how it went.

With no flags it generates a ledger of 200,000 objects, starts 16 peers in this
process serving it over TCP on 127.0.0.1 (varied latency; one slow peer; one
that drops its connection midway and comes back; one that misbehaves) and
fetches it. It exits 0 only if every object arrived and verified.

With -ledger it serves and fetches a real XRP Ledger ledger instead (a JSON
file of its header and state, as the README describes, such as mainnet
ledger 38129), rebuilds the state map from what it fetched and exits 0 only
if its root is the ledger's account_hash. With -base as well it starts from another ledger's
nodes and fetches only those it lacks.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.objects, "objects", 200_000, "leaves in the generated ledger (its nodes number about 1.4 times that)")
	fs.StringVar(&o.ledger, "ledger", "", "serve and fetch the real ledger in this JSON file (header and state) instead of a generated one")
	fs.StringVar(&o.base, "base", "", "with -ledger: start from the nodes of the real ledger in this file, fetching only those it lacks")
	fs.IntVar(&o.peers, "peers", 16, "in-process peers to start")
	fs.IntVar(&o.channels, "channels", 0, "requests each peer may have in flight: 0 adapts each peer's limit to how it answers (Vegas; the peer set uses 4), N fixes it at N")
	fs.IntVar(&o.batch, "batch", 64, "object hashes per request")
	fs.StringVar(&latency, "latency", "varied", "peers' latency: varied, none, fixed:20ms, uniform:5ms-40ms or lognormal:20ms,0.5")
	fs.Float64Var(&o.loss, "loss", 0, "probability that a peer silently drops a request")
	fs.BoolVar(&o.chaos, "chaos", false, "kill peers at random moments during the fetch and restart them shortly after")
	fs.IntVar(&o.misbehave, "misbehave", 1, "peers that misbehave: spoofed request IDs, duplicates, corrupt objects, wrong types")
	fs.StringVar(&o.transport, "transport", "tcp", "tcp (real sockets on 127.0.0.1) or mem (simulated peers on the real clock)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the ledger and of every random choice")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON on stdout (progress goes to stderr)")
	fs.StringVar(&strategy, "strategy", "scheduler", "scheduler, peerset (the fixed peer set the scheduler replaces), or both, one after the other")
	fs.StringVar(&connect, "connect", "", "fetch from running ledgerpeers at these comma-separated addresses instead (their -objects and -seed must match)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "the longest a request may wait for its response (through the scheduler, a request to a peer whose response times are known waits their RTO, at least 500ms)")
	fs.DurationVar(&o.stall, "stall", 20*time.Second, "give up when no object has verified for this long")
	fs.DurationVar(&o.wait, "wait", 5*time.Second, "how long to wait for the peers to connect before fetching")
	fs.StringVar(&o.store, "store", "", "keep the fetched objects on disk in this directory (a Pebble store), and resume from what it holds: a fetch killed midway and run again asks only for what is missing (default: a temporary directory, removed at the end; \"mem\": in memory, to compare)")
	fs.StringVar(&root, "root", "", "with -connect: the root hash (hex) of the ledger the peers serve, as ledgerpeer prints it, instead of generating the ledger from -objects and -seed")
	fs.IntVar(&o.expect, "expect", 0, "with -root: the ledger's node count, as ledgerpeer prints it, to show progress against (0: unknown)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	bad := func(format string, args ...any) (options, error) {
		return o, fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
	}
	var err error
	if o.latency, err = parseLatency(latency); err != nil {
		return bad("-latency: %v", err)
	}
	switch strategy {
	case "scheduler", "peerset":
		o.strategy = []string{strategy}
	case "both":
		o.strategy = []string{"scheduler", "peerset"}
	default:
		return bad("-strategy %q: want scheduler, peerset or both", strategy)
	}
	if connect != "" {
		for _, a := range strings.Split(connect, ",") {
			if a = strings.TrimSpace(a); a != "" {
				o.connect = append(o.connect, a)
			}
		}
		o.peers = len(o.connect)
	}
	if root != "" {
		if o.root, err = ledger.ParseHash(root); err != nil || o.root == (ledger.Hash{}) {
			return bad("-root %q: want a ledger's root hash, 64 hex digits", root)
		}
	}
	switch {
	case root != "" && o.connect == nil:
		return bad("-root needs -connect: in-process peers serve the ledger this process generates")
	case root != "" && o.ledger != "":
		return bad("-root and -ledger both name the ledger: give one")
	case o.expect != 0 && root == "":
		return bad("-expect needs -root")
	case o.expect < 0:
		return bad("-expect %d: want a node count, or 0 for unknown", o.expect)
	case o.store != "" && len(o.strategy) > 1:
		return bad("-store with -strategy both: the second fetch would resume from the first's objects")
	case o.transport != "tcp" && o.transport != "mem":
		return bad("-transport %q: want tcp or mem", o.transport)
	case o.connect != nil && o.transport != "tcp":
		return bad("-connect needs -transport tcp")
	case o.base != "" && o.ledger == "":
		return bad("-base needs -ledger")
	case o.objects < 1:
		return bad("-objects %d: want at least 1", o.objects)
	case o.peers < 1:
		return bad("-peers %d: want at least 1", o.peers)
	case o.channels < 0:
		return bad("-channels %d: want 0 (adaptive) or a fixed count of at least 1", o.channels)
	case o.batch < 1 || o.batch > 4096:
		return bad("-batch %d: want 1 to 4096", o.batch)
	case !(o.loss >= 0 && o.loss <= 1):
		return bad("-loss %v: want a probability", o.loss)
	case o.misbehave < 0 || o.misbehave > o.peers:
		return bad("-misbehave %d: want 0 to the number of peers", o.misbehave)
	case o.timeout <= 0 || o.stall <= 0 || o.wait <= 0:
		return bad("-timeout, -stall and -wait must be positive")
	}
	return o, nil
}

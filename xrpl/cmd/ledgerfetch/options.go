package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/timeouts"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/internal/fdlimit"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// options are the command line, parsed and checked.
type options struct {
	objects  int
	peers    int
	channels int
	batch    int
	// noRateLimits: -rate-limits off, the peers are not kept within
	// fetch.RippledRate.
	noRateLimits bool
	latency      latencySpec
	loss         float64
	chaos        bool
	misbehave    int
	// peerLimitsOff turns off the in-process peers' rippled limits
	// (-peer-limits off), to compare.
	peerLimitsOff bool
	transport     string // "tcp" or "mem"
	seed          uint64
	json          bool
	strategy      []string // "scheduler", "peerset", "rippled", in the order to run
	connect       []string // external peers' addresses
	timeout       time.Duration
	stall         time.Duration
	wait          time.Duration // for the peers to connect before the fetch starts
	// answerTimeout drops a TCP peer that, asked something, sends nothing
	// for this long (tcpnet.ConnConfig.AnswerTimeout).
	answerTimeout time.Duration
	ledger        string      // a real ledger file to serve and fetch, instead of a generated one
	base          string      // a real ledger file the fetch starts from (incremental)
	store         string      // the node store's directory; "" for a temporary one
	root          ledger.Hash // with -connect: the peers' root, instead of generating the ledger
	expect        int         // with -root: the ledger's node count, if known
	components    componentOptions
	process       processOptions
}

// errUsage marks errors in the command line; run exits with 2 for them.
var errUsage = errors.New("usage")

// parseOptions parses args. Errors wrap errUsage; -h prints the usage to
// stderr and returns flag.ErrHelp.
func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	var latency, strategy, connect, root, peerLimits string
	fs := flag.NewFlagSet("ledgerfetch", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `ledgerfetch downloads a whole ledger from its root hash through the peersched
scheduler, checking every object against its hash, and reports how it went.

With no flags it generates a ledger of 200,000 objects, starts 16 peers in this
process serving it over TCP on 127.0.0.1 (varied latency; one slow peer; one
that drops its connection midway and comes back; one that misbehaves) and
fetches it. With fewer peers fewer get those roles: more than half stay
honest, and none misbehaves below 4 unless -misbehave says so. It exits 0
only if every object arrived and verified.

With -ledger it serves and fetches a real XRP Ledger ledger instead (a JSON
file of its header and state, as docs/fetch-report.md in the repository
describes, such as mainnet ledger 38129), rebuilds the state map from what it fetched and exits 0 only
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
	fs.IntVar(&o.channels, "channels", 0, "requests each peer may have in flight: 0 adapts each peer's limit to how it answers (Vegas; the peer set uses 4), N fixes it at N; peers x N may be at most 4,194,304, the scheduler's cap on requests in flight (262,144 with 16 peers)")
	fs.IntVar(&o.batch, "batch", 0, "object hashes per request: 0 lets the fetch choose for each peer (64, more while the peer's rate binds, see -rate-limits, up to 1,024: fetch.Config.PeerRate); N fixes every request at N, 1 to 4,096")
	rateLimits := fs.String("rate-limits", "rippled", "rippled keeps each peer the scheduler sends to within what a rippled peer accepts without a warning, with a margin (fetch.RippledRate: 16 queries a second after a burst of 64; a rippled peer warns at 20 a second); off sends as fast as the peers' limits allow, to compare")
	fs.StringVar(&latency, "latency", "varied", "peers' latency: varied (each peer its own median, from 5ms for p00 up to 35ms, the same whatever -peers is), none, fixed:20ms, uniform:5ms-40ms or lognormal:20ms,0.5")
	fs.Float64Var(&o.loss, "loss", 0, "probability that a peer silently drops a request")
	fs.StringVar(&peerLimits, "peer-limits", "on", "on: the in-process peers limit us as rippled peers do (fees per query, a warning at a balance of 5,000, a cut at 25,000 and refused redials while it stays there, queries dropped while 192 replies wait); off: they only count, to compare")
	fs.BoolVar(&o.chaos, "chaos", false, "kill peers at random moments during the fetch and restart them shortly after")
	fs.IntVar(&o.misbehave, "misbehave", 0, "peers that misbehave: spoofed request IDs, duplicates, corrupt objects, wrong types (unless given: 1 with 4 peers or more, none with fewer, where one would be a large share of the peers)")
	fs.StringVar(&o.transport, "transport", "tcp", "tcp (real sockets on 127.0.0.1) or mem (simulated peers on the real clock)")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the ledger and of every random choice")
	fs.BoolVar(&o.json, "json", false, `print the report as JSON on stdout (progress goes to stderr): {"runs": [one per strategy], "comparison": {...}, with -strategy both or all}`)
	fs.StringVar(&strategy, "strategy", "scheduler", "scheduler; peerset (the fixed peer set the scheduler replaces); rippled (rippled's own acquisition: 5 peers, 3 more after each 3s without progress, 12 hashes a request blind and 128 after a useful reply, one request per peer at a time, giving up at the seventh interval without progress; -batch, -channels and -timeout do not apply to it); both (scheduler and peerset) or all (the three), one after the other on the same ledger and peers")
	fs.StringVar(&connect, "connect", "", "fetch from running ledgerpeers at these comma-separated HOST:PORT addresses instead (they must serve the same ledger: the same -objects and -seed, or -ledger with the same file, unless -root names it; -peers, -chaos, -latency, -misbehave, -loss, -peer-limits and -transport mem, which describe in-process peers, are refused with it)")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Second, "the longest a request may wait for its response (through the scheduler, a request to a peer whose response times are known waits their RTO, at least 500ms, or -timeout if that is less)")
	fs.DurationVar(&o.stall, "stall", 20*time.Second, "give up when no object has verified for this long")
	fs.DurationVar(&o.wait, "wait", 5*time.Second, "how long to wait for the peers to connect before fetching")
	fs.DurationVar(&o.answerTimeout, "answer-timeout", tcpnet.DefaultAnswerTimeout, "over TCP: drop a peer's connection when, asked something, it sends nothing for this long, or takes longer over one frame (it is redialled after a back-off, doubling to 30s, jittered); the report names why each connection ended")
	fs.StringVar(&o.store, "store", "", "keep the fetched objects on disk in this directory (a Pebble store), and resume from what it holds: a fetch killed midway and run again asks only for what is missing (default: a temporary directory, removed at the end; \"mem\": in memory, to compare)")
	fs.StringVar(&root, "root", "", "with -connect: the root hash (hex) of the ledger the peers serve, as ledgerpeer prints it, instead of generating the ledger from -objects and -seed")
	o.components.register(fs)
	o.process.register(fs)
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
	switch *rateLimits {
	case "rippled":
	case "off":
		o.noRateLimits = true
	default:
		return o, fmt.Errorf("%w: -rate-limits %q: want rippled or off", errUsage, *rateLimits)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	switch peerLimits {
	case "on":
	case "off":
		o.peerLimitsOff = true
	default:
		return o, fmt.Errorf("%w: -peer-limits %q: want on or off", errUsage, peerLimits)
	}
	if err := o.check(given, latency, strategy, connect); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.checkStore(root); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.components.check(given, o.peers, o.strategy, o.batch); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	if err := o.process.check(); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	return o, nil
}

// misbehavingByDefault is how many peers misbehave when -misbehave is not
// given: one, once there are enough peers (minPeersToMisbehave) that it is
// a small share of them; none below, where it would be a third or more of
// the peers and slow the fetch down more than it shows anything.
func misbehavingByDefault(peers int) int {
	if peers >= minPeersToMisbehave {
		return 1
	}
	return 0
}

const minPeersToMisbehave = 4

// flagsWithoutConnect are the flags that describe the in-process peers, and
// so have no effect with -connect: the peers there run with their own.
var flagsWithoutConnect = []string{"peers", "chaos", "latency", "misbehave", "loss", "peer-limits"}

// check completes o from the flags' strings and checks every value, each
// error naming its flag and the reason. given holds the flags set on the
// command line.
func (o *options) check(given map[string]bool, latency, strategy, connect string) error {
	var err error
	if o.latency, err = parseLatency(latency); err != nil {
		return fmt.Errorf("-latency %q: %w", latency, err)
	}
	switch strategy {
	case "scheduler", "peerset", "rippled":
		o.strategy = []string{strategy}
	case "both":
		o.strategy = []string{"scheduler", "peerset"}
	case "all":
		o.strategy = []string{"scheduler", "peerset", "rippled"}
	default:
		return fmt.Errorf("-strategy %q: want scheduler, peerset, rippled, both or all", strategy)
	}
	if o.transport != "tcp" && o.transport != "mem" {
		return fmt.Errorf("-transport %q: want tcp or mem", o.transport)
	}
	if given["connect"] {
		if err := o.checkConnect(given, connect); err != nil {
			return err
		}
	}
	if !given["misbehave"] && o.connect == nil {
		o.misbehave = misbehavingByDefault(o.peers)
	}
	switch {
	case o.base != "" && o.ledger == "":
		return fmt.Errorf("-base %q needs -ledger: it is the ledger that one starts from", o.base)
	case o.objects < 1:
		return fmt.Errorf("-objects %d: want at least 1", o.objects)
	case o.peers < 1:
		return fmt.Errorf("-peers %d: want at least 1", o.peers)
	case o.channels < 0:
		return fmt.Errorf("-channels %d: want 0 (adaptive) or a fixed count of at least 1", o.channels)
	case o.channels > maxChannels(o.peers):
		return fmt.Errorf("-channels %d: want at most %s with %d peers: peers x channels may be at most %s, the scheduler's cap on requests in flight (scheduler.DefaultMaxRequests)",
			o.channels, commas(maxChannels(o.peers)), o.peers, commas(scheduler.DefaultMaxRequests))
	case o.batch < 0 || o.batch > fetch.MaxBatch:
		return fmt.Errorf("-batch %d: want 0 (the fetch chooses) or 1 to %d (the most objects a peer sends in one answer)", o.batch, fetch.MaxBatch)
	case !(o.loss >= 0 && o.loss <= 1):
		return fmt.Errorf("-loss %v: want a probability, from 0 to 1", o.loss)
	case o.misbehave < 0 || o.misbehave > o.peers:
		return fmt.Errorf("-misbehave %d: want 0 to the number of peers (-peers %d)", o.misbehave, o.peers)
	}
	if err := checkDurations(o.timeout, o.stall, o.wait); err != nil {
		return err
	}
	if o.answerTimeout <= 0 {
		return fmt.Errorf("-answer-timeout %v: want a positive time", o.answerTimeout)
	}
	return checkOpenFiles(o.peers, o.filesPerPeer(), fdlimit.Read())
}

// checkConnect checks -connect's addresses (their form: that their hosts
// resolve is checked before dialling, by resolveAll) and that no flag that
// only describes in-process peers was given with it.
func (o *options) checkConnect(given map[string]bool, connect string) error {
	for _, a := range strings.Split(connect, ",") {
		if a = strings.TrimSpace(a); a != "" {
			o.connect = append(o.connect, a)
		}
	}
	if len(o.connect) == 0 {
		return fmt.Errorf("-connect %q: no address; want HOST:PORT, or several separated by commas", connect)
	}
	for _, name := range flagsWithoutConnect {
		if given[name] {
			return fmt.Errorf("-%s has no effect with -connect: it describes the in-process peers, and the peers at -connect's addresses run as their own flags say", name)
		}
	}
	if o.transport != "tcp" {
		return fmt.Errorf("-transport %s has no effect with -connect, which always fetches over tcp", o.transport)
	}
	if err := checkAddrs(o.connect); err != nil {
		return err
	}
	o.peers = len(o.connect)
	return nil
}

// The bounds of the duration flags.
const (
	// minTimeout is the timeout clock's granularity: a request's deadline
	// is computed in its steps.
	minTimeout = timeouts.DefaultGranularity
	// minStall is how often the fetch checks for a stall (progressEvery):
	// a shorter -stall would still wait that long, and then report a stall
	// of however long it had been.
	minStall = progressEvery
)

// checkDurations checks -timeout, -stall and -wait, each on its own.
func checkDurations(timeout, stall, wait time.Duration) error {
	switch {
	case timeout < minTimeout:
		return fmt.Errorf("-timeout %v: want at least %v, the granularity of request deadlines", timeout, minTimeout)
	case timeout > timeouts.MaxDeadline:
		return fmt.Errorf("-timeout %v: want at most %v", timeout, timeouts.MaxDeadline)
	case stall < minStall:
		return fmt.Errorf("-stall %v: want at least %v, how often the fetch checks for a stall", stall, minStall)
	case wait <= 0:
		return fmt.Errorf("-wait %v: want a positive time to wait for the peers to connect", wait)
	}
	return nil
}

// filesPerPeer is how many open files each peer costs this process: over
// TCP in-process, a listener and both ends of its connection; with
// -connect, the one connection; simulated, none.
func (o options) filesPerPeer() int {
	switch {
	case o.connect != nil:
		return 1
	case o.transport == "tcp":
		return 3
	}
	return 0
}

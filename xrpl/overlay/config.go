package overlay

import (
	"errors"
	"fmt"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// Strategy is how the fetching nodes fetch.
type Strategy string

const (
	// Adaptive is the scheduler with its defaults: each neighbour's limit
	// adapts to how it answers (peer.Options{}, limit.Vegas).
	Adaptive Strategy = "scheduler"
	// Fixed is the scheduler with Config.Channels channels per neighbour.
	Fixed Strategy = "fixed"
	// PeerSet is fetch.Peerset, the fixed set of peers the scheduler
	// replaces, with Config.Channels requests in flight per peer.
	PeerSet Strategy = "peerset"
	// Rippled is fetch.Rippled, rippled's own acquisition with its own
	// numbers (one request per peer at a time, whatever Config.Channels
	// and Config.Batch say). A neighbour says it has the ledger (which
	// raises its score, as rippled's status messages do) once it holds it
	// all.
	Rippled Strategy = "rippled"
)

// Strategies lists every strategy, in the order reports show them.
var Strategies = []Strategy{Adaptive, Fixed, PeerSet, Rippled}

// Defaults for the zero fields of Config.
const (
	DefaultSeeders    = 3
	DefaultChannels   = 4
	DefaultMinLatency = 10 * time.Millisecond
	DefaultMaxLatency = 40 * time.Millisecond
	DefaultTimeLimit  = time.Minute
)

// DefaultService is each node's capacity to serve when Config.Service is
// zero: two workers, 1ms per request and 20µs per object (2.3ms for a full
// batch of 64), at most 16 requests waiting; more are dropped unanswered, so
// their requesters time out.
var DefaultService = simnet.Service{
	Workers:    2,
	PerRequest: time.Millisecond,
	PerObject:  20 * time.Microsecond,
	QueueLimit: 16,
	Overflow:   simnet.OverflowDrop,
}

// ErrBadConfig is returned by Run for a Config that describes no overlay.
var ErrBadConfig = errors.New("overlay: bad config")

// Config describes one overlay. Ledger, Nodes and Degree are required.
type Config struct {
	// Ledger is what the seeders hold at the start and every other node
	// fetches.
	Ledger *ledger.Ledger
	// Nodes is the number of nodes, at least 3.
	Nodes int
	// Degree is the number of neighbours each node gets in the random graph
	// (a few may end one or two short), in [2, Nodes-1].
	Degree int
	// Seeders is how many nodes hold the ledger at the start, in
	// [1, Nodes-1]. 0 means DefaultSeeders (or Nodes-1 if fewer).
	Seeders int
	// Seed draws the graph, the link latencies, the seeders and every
	// scheduler's RankSeed: the same Config replays exactly.
	Seed uint64

	// Channels is the per-neighbour channel count of Fixed and PeerSet.
	// 0 means DefaultChannels.
	Channels int
	// Batch is the fetch's hashes per request; 0 means fetch.DefaultBatch.
	Batch int
	// Service is every node's capacity to serve; the zero Service means
	// DefaultService. BytesPerSecond must be 0: the overlay times answers
	// by their objects. Overflow may drop or reject (a refusal the fetch is
	// told of).
	Service simnet.Service
	// MinLatency and MaxLatency bound each link's one-way latency, drawn
	// uniformly per link. Both zero means DefaultMinLatency and
	// DefaultMaxLatency.
	MinLatency, MaxLatency time.Duration
	// TimeLimit ends the simulation, virtual time, with the fetches still
	// running reported incomplete. 0 means DefaultTimeLimit.
	TimeLimit time.Duration

	// LimitsOff turns off the limits every node puts on each neighbour as
	// a rippled peer does (see package resource and Run), to compare: no
	// node then cuts a neighbour off for its charges or drops its queries
	// for a long send queue. The charges and warnings are still counted.
	LimitsOff bool

	// Progress, if set, is called on the simulation's goroutine each time
	// a node completes and at every virtual second.
	Progress func(Progress)
}

// Progress is a snapshot of a running simulation.
type Progress struct {
	Strategy  Strategy
	Virtual   time.Duration // virtual time since the start
	Completed int           // fetching nodes that hold the verified ledger
	Fetching  int           // fetching nodes in all
}

// withDefaults returns c with its zero fields filled in, or an error
// wrapping ErrBadConfig that names the field.
func (c Config) withDefaults() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}
	if c.Ledger == nil {
		return bad("no ledger")
	}
	if c.Nodes < 3 {
		return bad("Nodes %d: want at least 3", c.Nodes)
	}
	if c.Degree < 2 || c.Degree >= c.Nodes {
		return bad("Degree %d: want at least 2 and below Nodes (%d)", c.Degree, c.Nodes)
	}
	if c.Seeders == 0 {
		c.Seeders = min(DefaultSeeders, c.Nodes-1)
	}
	if c.Seeders < 1 || c.Seeders >= c.Nodes {
		return bad("Seeders %d: want at least 1 and below Nodes (%d)", c.Seeders, c.Nodes)
	}
	if c.Channels == 0 {
		c.Channels = DefaultChannels
	}
	if c.Channels < 1 {
		return bad("Channels %d: want at least 1", c.Channels)
	}
	if c.Batch == 0 {
		c.Batch = fetch.DefaultBatch
	}
	if c.Batch < 1 || c.Batch > fetch.MaxBatch {
		return bad("Batch %d: want 1 to %d", c.Batch, fetch.MaxBatch)
	}
	if c.Service == (simnet.Service{}) {
		c.Service = DefaultService
	}
	if err := (simnet.Profile{Service: c.Service}).Validate(); err != nil {
		return bad("Service: %v", err)
	}
	if c.Service.Workers == 0 {
		return bad("Service: want at least one worker")
	}
	if c.Service.BytesPerSecond != 0 {
		// A node's answer time counts its objects, not their bytes: the
		// shared ledger's sizes are not looked up per answer.
		return bad("Service: BytesPerSecond %d: not modelled in the overlay, want 0", c.Service.BytesPerSecond)
	}
	if c.MinLatency == 0 && c.MaxLatency == 0 {
		c.MinLatency, c.MaxLatency = DefaultMinLatency, DefaultMaxLatency
	}
	if c.MinLatency < 0 || c.MaxLatency < c.MinLatency {
		return bad("latency [%v, %v]: want 0 <= MinLatency <= MaxLatency", c.MinLatency, c.MaxLatency)
	}
	if c.TimeLimit == 0 {
		c.TimeLimit = DefaultTimeLimit
	}
	if c.TimeLimit < 0 {
		return bad("TimeLimit %v: want a positive duration", c.TimeLimit)
	}
	return c, nil
}

package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/node"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// componentOptions are the flags of the components that run beside the
// fetch (package node), and the node's budget.
type componentOptions struct {
	lookups   float64 // lookups a second
	relay     float64 // notifications a second to every peer
	budget    int64   // messages a second, 0: no cap
	bandwidth int64   // bytes a second, 0: no cap
}

// maxDefaultLookups caps -lookups' default: a modest stream, one a second
// for each peer and at most this many, so that the first report shows
// what the scheduler does for urgent traffic beside the bulk while the
// lookups take a small share of what each peer accepts (a peer kept
// within fetch.RippledRate takes 16 queries a second, lookups' included).
const maxDefaultLookups = 20

// defaultLookups is -lookups' default with peers peers.
func defaultLookups(peers int) float64 { return float64(min(peers, maxDefaultLookups)) }

// lookupKeys is how many of the ledger's leaves lookups choose from.
const lookupKeys = 4096

func (c *componentOptions) register(fs *flag.FlagSet) {
	fs.Float64Var(&c.lookups, "lookups", 0, "lookups a second beside the fetch (default: one a second for each peer, at most 20): each asks a peer for one state entry by hash, as an RPC server answering \"what is in account X\" does, at the scheduler's highest priority (with -strategy peerset or rippled: through a peer set of their own, the old way); 0 runs none")
	fs.Float64Var(&c.relay, "relay", 0, "notifications a second to every peer beside the fetch, as transaction relay sends them, at the scheduler's middle priority, each closing a channel for 10ms (with -strategy peerset or rippled: sent straight to the peers); 0 sends none")
	fs.Int64Var(&c.budget, "budget", 0, "cap the node's messages a second, over every peer and component, with a burst of a tenth of that (the scheduler's Config.Budget: higher priorities are served first, and the fetch keeps a share); 0: no cap. Scheduler only")
	fs.Int64Var(&c.bandwidth, "bandwidth", 0, "cap the bytes a second of what the node sends, over every peer and component, with a burst of one second's worth (Config.Budget); 0: no cap. Scheduler only")
}

// check completes c (-lookups' default needs the peers' count) and
// checks the flags, each error naming its flag. batch is -batch.
func (c *componentOptions) check(given map[string]bool, peers int, strategies []string, batch int) error {
	if !given["lookups"] {
		c.lookups = defaultLookups(peers)
	}
	switch {
	case !(c.lookups >= 0 && c.lookups <= node.MaxPerSecond):
		return fmt.Errorf("-lookups %v: want 0 to %d a second", c.lookups, node.MaxPerSecond)
	case !(c.relay >= 0 && c.relay <= node.MaxPerSecond):
		return fmt.Errorf("-relay %v: want 0 to %d a second", c.relay, node.MaxPerSecond)
	case c.budget < 0:
		return fmt.Errorf("-budget %d: want 0 (no cap) or a positive count of messages a second", c.budget)
	case c.bandwidth < 0:
		return fmt.Errorf("-bandwidth %d: want 0 (no cap) or a positive count of bytes a second", c.bandwidth)
	case c.bandwidth > 0 && c.bandwidth < fetchBytes(batch):
		return fmt.Errorf("-bandwidth %d: want at least %d, the size of the fetch's largest request (the budget's burst is one second's worth)", c.bandwidth, fetchBytes(batch))
	}
	if c.budget > 0 || c.bandwidth > 0 {
		for _, s := range strategies {
			if s != "scheduler" {
				return fmt.Errorf("-budget and -bandwidth cap the scheduler's traffic: -strategy %s has none to cap", s)
			}
		}
	}
	return nil
}

// fetchBytes is the size the fetch declares for its requests under a byte
// budget: its largest, at -batch or, when it chooses, fetch.MaxAutoBatch.
func fetchBytes(batch int) int64 {
	if batch == 0 {
		batch = fetch.MaxAutoBatch
	}
	return node.FetchBytes(batch)
}

// schedulerBudget is the scheduler's Config.Budget for -budget and
// -bandwidth.
func (c componentOptions) schedulerBudget() scheduler.Budget {
	return node.Budget(c.budget, c.bandwidth)
}

// nodeConfig is the components' configuration: lookups ask for the
// ledger's leaves, or for its root where this process does not hold the
// ledger (-root).
func (c componentOptions) nodeConfig(src source, seed uint64) node.Config {
	keys := []ledger.Hash{src.rootHash()}
	if src.ledger != nil {
		keys = node.LeafHashes(src.ledger, lookupKeys)
	}
	return node.Config{Seed: seed, Lookups: c.lookups, Relay: c.relay, Keys: keys}
}

// withComponents returns the host the network is to hand its peers to,
// and the components beside the fetch (nil if none): on the scheduler s,
// when it is the host; around the other strategies' hosts, the old way.
func withComponents(host tcpnet.Host, s *scheduler.Scheduler, cfg node.Config) (tcpnet.Host, *node.Components, error) {
	if cfg.Lookups == 0 && cfg.Relay == 0 {
		return host, nil, nil
	}
	if s != nil {
		c, err := node.OnScheduler(s, cfg)
		return host, c, err
	}
	r, err := node.NewRouter(host, cfg)
	if err != nil {
		return nil, nil, err
	}
	return r, r.Components(), nil
}

// writeComponents writes the table of the components that ran beside the
// fetch, the fetch first.
func writeComponents(w io.Writer, r result) {
	if len(r.Components) < 2 {
		return
	}
	fmt.Fprintf(w, "\n  %-9s %-9s %8s %8s %8s %9s %9s %11s %11s  %s\n", "component", "way", "priority", "requests", "done", "p50", "p99", "queue mean", "queue p99", "throughput")
	for _, c := range r.Components {
		fmt.Fprintf(w, "  %-9s %-9s %8d %8s %8s %9s %9s %11s %11s  %s %s\n", c.Name, shortWay(c.Way), c.Priority, commas(c.Requests), commas(c.Done),
			dur(time.Duration(c.P50)), dur(time.Duration(c.P99)), dur(time.Duration(c.QueueMean)), dur(time.Duration(c.QueueP99)),
			commas(int(c.Throughput)), c.Unit)
	}
}

func shortWay(way string) string {
	if way == node.WayOwnPeers {
		return "own"
	}
	return "shared"
}

// Command ledgerfetch downloads a whole ledger from its root hash through the
// peersched scheduler, verifying every object, and reports how it went. Run
// it with no flags for the demonstration: 16 in-process peers serving a
// 200,000-object ledger over TCP on 127.0.0.1, hashed as the XRP Ledger's
// state map and framed as rippled's peer protocol. -ledger fetches a real
// ledger and checks it against its account_hash; -base makes that fetch
// incremental. See -h for the flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync/atomic"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/node"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK         = 0 // every object arrived and verified
	exitIncomplete = 1 // a fetch ended without every object, or could not start
	exitUsage      = 2 // the command line is wrong
)

// run is the command: it parses args, fetches with each strategy asked for,
// prints progress and reports, and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "ledgerfetch: %v\n", err)
		return exitUsage
	}
	if o.connect != nil {
		if err := resolveAll(ctx, o.connect, net.DefaultResolver.LookupHost); err != nil {
			fmt.Fprintf(stderr, "ledgerfetch: %v\n", err)
			return exitUsage
		}
	}
	stopProfile, err := o.process.startCPUProfile()
	if err != nil {
		fmt.Fprintf(stderr, "ledgerfetch: %v\n", err)
		return exitIncomplete
	}
	defer func() {
		if err := stopProfile(); err != nil {
			fmt.Fprintf(stderr, "ledgerfetch: -cpuprofile: %v\n", err)
		}
	}()
	src, err := loadSource(o)
	if err != nil {
		fmt.Fprintf(stderr, "ledgerfetch: %v\n", err)
		return exitUsage
	}
	o.process.limitMemory(o.store == memStore)
	progressOut := stdout
	if o.json {
		progressOut = stderr
	}
	tty := isTerminal(progressOut)

	var results []result
	code := exitOK
	for _, strategy := range o.strategy {
		p := &progressPrinter{w: progressOut, tty: tty, peers: o.peers}
		if len(o.strategy) > 1 {
			p.label = strategy + ": "
		}
		res, err := fetchWith(ctx, o, src, strategy, p.show, func(msg string) { fmt.Fprintf(stderr, "ledgerfetch: %s\n", msg) })
		if err != nil {
			fmt.Fprintf(stderr, "ledgerfetch: %s: %v\n", strategy, err)
			code = exitIncomplete
		}
		if res != nil && res.Verified != nil && !*res.Verified {
			fmt.Fprintf(stderr, "ledgerfetch: %s: %s\n", strategy, res.VerifyError)
			code = exitIncomplete
		}
		if res != nil {
			results = append(results, *res)
		}
	}

	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(newJSONReport(results)); err != nil {
			fmt.Fprintf(stderr, "ledgerfetch: %v\n", err)
			return exitIncomplete
		}
		return code
	}
	for i, r := range results {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		writeReport(stdout, r)
	}
	writeComparison(stdout, results)
	return code
}

// fetchWith runs one fetch of src's ledger with the strategy named, on a
// fresh network of peers, and returns its result (nil if it could not start)
// and error. For a real ledger the result says whether the state rebuilt
// from what was fetched (and reused) has the ledger's account_hash.
func fetchWith(ctx context.Context, o options, src source, strategy string, progress func(fetch.Progress), warn func(string)) (*result, error) {
	l := src.ledger
	store, err := openStore(o.store)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := store.close(); err != nil {
			warn(fmt.Sprintf("closing the store: %v", err))
		}
	}()
	// A fetch killed before it ended leaves its store unmerged; the
	// resume reads every node there, faster once merged.
	merging, err := store.compact(ctx)
	if err != nil {
		return nil, fmt.Errorf("-store: %w", err)
	}
	heap := &heapProfiler{file: o.process.memProfile, warn: warn}
	cfg := fetch.Config{
		Root:         src.rootHash(),
		Store:        store,
		Expected:     src.expected(),
		Batch:        o.batch,
		Timeout:      o.timeout,
		StallTimeout: o.stall,
		Progress: func(p fetch.Progress) {
			heap.progress(p)
			progress(p)
		},
		ProgressEvery: progressEvery,
	}
	if o.batch == 0 {
		cfg.PeerRate = o.peerRate() // the fetch sizes its requests to the peers' rate
	}
	if src.base != nil {
		cfg.Base = src.base
	}
	// A peer the fetch judges useless (it sends corrupt objects) is
	// disconnected for good; the network exists only once the host does.
	var net atomic.Pointer[network]
	cfg.Disconnect = func(id peer.ID, _ error) {
		if n := net.Load(); n != nil {
			(*n).disconnect(id)
		}
	}
	// The transport counts each peer's bytes, taken and refused, and the
	// fetch judges them (a peer that floods it with late, duplicate or
	// unasked answers is disconnected).
	meter := newTrafficMeter()
	cfg.Traffic = meter.totals
	cfg.Priority = node.PriorityFetch
	if o.components.bandwidth > 0 {
		cfg.Bytes = fetchBytes(o.batch)
	}
	var host tcpnet.Host
	var sched *scheduler.Scheduler
	var fetchRun func(context.Context) (fetch.Report, error)
	stop := func() {}
	switch strategy {
	case "scheduler":
		// IDs that fit TMGetObjectByHash's seq, on every transport, so the
		// simulated fetch issues the IDs the TCP one does.
		s, err := scheduler.New(scheduler.Config{RequestIDs: tcpnet.RequestIDs(), Budget: o.components.schedulerBudget()})
		if err != nil {
			return nil, err
		}
		host, stop, sched = s, func() { _ = s.Shutdown(context.Background()) }, s
		fetchRun = func(ctx context.Context) (fetch.Report, error) { return fetch.Run(ctx, s, cfg) }
	case "peerset":
		ps, err := fetch.NewPeerset(cfg)
		if err != nil {
			return nil, err
		}
		host, fetchRun = ps, ps.Run
	case "rippled":
		rp, err := fetch.NewRippled(cfg, fetch.RippledConfig{Seed: o.seed})
		if err != nil {
			return nil, err
		}
		host, fetchRun = rp, rp.Run
	}
	host, comps, err := withComponents(host, sched, o.components.nodeConfig(src, o.seed))
	if err != nil {
		stop()
		return nil, err
	}
	nw, roles, err := startNetwork(ctx, o, l, host, meter, warn)
	if err != nil {
		stop()
		return nil, err
	}
	net.Store(&nw)
	if comps != nil {
		comps.Start()
	}
	rep, err := fetchRun(ctx)
	heap.end()
	var others []node.ComponentReport
	if comps != nil {
		others = comps.Stop()
	}
	events := nw.events()
	nw.close()
	stop()
	said, counted := nw.said() // after close: the peers' counts are final
	res := newResult(rep, o, roles, events, err)
	if others != nil {
		way := node.WayScheduler
		if sched == nil {
			way = node.WayOwnPeers
		}
		res.Components = append([]node.ComponentReport{node.FetchReport(way, node.PriorityFetch, rep)}, others...)
	}
	res.noteSaid(said, counted, o.peerLimitsOff)
	res.noteStore(o, store)
	if rep.Complete {
		took, err := store.compact(ctx)
		if err != nil {
			// What was written is all there, only not merged yet.
			warn(fmt.Sprintf("compacting the store (its nodes are kept): %v", err))
		}
		merging += took
	}
	res.StoreCompaction = fetch.Duration(merging)
	if src.header != nil {
		res.checkAccountHash(o, src, store, rep.Complete)
	}
	return &res, err
}

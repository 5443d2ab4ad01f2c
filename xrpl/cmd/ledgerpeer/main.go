// Command ledgerpeer serves a generated ledger over TCP until interrupted, so
// that ledgerfetch can fetch across processes or machines:
//
//	ledgerpeer -listen 127.0.0.1:7001 -objects 200000 -seed 1 &
//	ledgerpeer -listen 127.0.0.1:7002 -objects 200000 -seed 1 &
//	ledgerfetch -connect 127.0.0.1:7001,127.0.0.1:7002 -objects 200000 -seed 1
//
// The same -objects and -seed give the same ledger, so every peer serves
// what the fetcher expects. -ledger serves a real ledger from its file
// instead (ledgerfetch -connect ... -ledger with the same file fetches it).
//
// -store DIR serves the ledger from a node store on disk instead of memory,
// so that a peer's memory does not grow with the ledger: the first run
// builds DIR from -objects and -seed (streaming the tree in, never holding
// it) or from -ledger, and later runs serve what DIR holds. A range of
// ports in -listen serves one peer per port, each with its own
// connections, counters and accounts of its clients, all from one ledger:
//
//	ledgerpeer -store /tmp/mainnet -objects 19000000 -listen 127.0.0.1:7001-7016 &
//	ledgerfetch -connect 127.0.0.1:7001,...,127.0.0.1:7016 -root ROOT -expect NODES
//
// The peer serves from DIR/nodes.flat (-flat on, the default): the store's
// nodes sorted by hash, with a table in memory of where each bucket of
// hashes starts, so that a lookup is one read (package
// xrpl/nodestore/flatstore). It is built from the store on the first run
// that lacks it, or finds it cut short, its header or table damaged, or of
// another ledger. With -flat off
// the peer serves from the store itself, whose block cache holds its index
// blocks, which every lookup reads, and little more (-cache auto): the
// fetch asks for each node once, so a data block cached is seldom read
// again.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/peersched/peersched/xrpl/internal/profile"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run serves until ctx ends and returns the exit code: 0 after a clean
// shutdown, 1 if it could not serve, 2 for a bad command line. Its first
// line on stdout names the address it listens on.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ledgerpeer", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:7001", "address to serve on (port 0 picks a free one); HOST:FIRST-LAST serves one peer per port in the range, from one copy of the ledger")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run (building the store included) to this file, for go tool pprof")
	storeDir := fs.String("store", "", "serve the ledger from a node store on disk in this directory, built on the first run from -objects and -seed or -ledger, and reused by later runs (if any of their -objects, -seed or -ledger is given, it must name the ledger the store holds, the store's own -objects or -seed standing for the one not given)")
	flat := fs.String("flat", "on", "with -store: on serves from a file of the store's nodes sorted by hash, DIR/nodes.flat, which reads a node with one pread (built from the store on the first run that lacks it, or finds it cut short, its header or table damaged, or of another ledger); off serves from the store itself, through its block cache (-cache)")
	cache := fs.String("cache", "auto", "with -store -flat off: the store's block cache, which keeps the index and data blocks last read in memory (outside the Go heap in cgo builds): auto sizes it to hold the store's index blocks, which every lookup reads, and a quarter more (8 MiB at least, 80 MiB at most; 10 MiB at 1M entries); N: N MiB")
	objects := fs.Int("objects", 200_000, "leaves in the generated ledger")
	file := fs.String("ledger", "", "serve the real ledger in this JSON file (header and state) instead of a generated one")
	seed := fs.Uint64("seed", 1, "seed of the ledger and of the peer's random choices")
	latency := fs.Duration("latency", 0, "delay before each answer")
	jitter := fs.Duration("jitter", 0, "answers are delayed uniformly within latency ± jitter (at most -latency)")
	loss := fs.Float64("loss", 0, "probability of ignoring a request, from 0 to 1")
	misbehave := fs.Float64("misbehave", 0, "probability of lying in an answer, from 0 to 1: spoofed IDs, duplicates, corrupt objects, wrong types")
	peerLimits := fs.String("peer-limits", "on", "on: limit clients as a rippled peer does (fees per query and ping, a cut at a balance of 25,000 and refused redials while it stays there, queries dropped while 192 replies wait); off: only count, to compare")
	chatty := fs.Bool("chatty", false, "talk as rippled does to every peer: interleave status changes, manifests, endpoints and pings with the replies")
	var lim tcpnet.ServerLimits
	fs.IntVar(&lim.MaxConns, "max-conns", tcpnet.DefaultMaxConns, "connections served at once; one more is closed as it comes, unless another address holds more connections than its own would then have: that address's newest is closed to make room")
	fs.IntVar(&lim.MaxConnsPerAddr, "max-conns-per-addr", tcpnet.DefaultMaxConnsPerAddr, "connections served at once from one IP address")
	fs.DurationVar(&lim.IdleTimeout, "idle-timeout", tcpnet.DefaultIdleTimeout, "close a connection on which no request begins for this long")
	fs.DurationVar(&lim.FrameTimeout, "frame-timeout", tcpnet.DefaultFrameTimeout, "close a connection whose request, once begun, is not whole within this long")
	fs.DurationVar(&lim.WriteTimeout, "write-timeout", tcpnet.DefaultWriteTimeout, "close a connection that does not take a reply within this long")
	fs.IntVar(&lim.MaxWaiting, "max-waiting", tcpnet.DefaultMaxWaiting, "replies of one connection waiting for their delay (-latency) or to be written; past it the connection is not read")
	fs.IntVar(&lim.MaxWaitingTotal, "max-waiting-total", tcpnet.DefaultMaxWaitingTotal, "the same, over all connections")
	fs.IntVar(&lim.MaxWaitingObjects, "max-waiting-objects", tcpnet.DefaultMaxWaitingObjects, "the objects of those replies, over all connections; past it no connection is read")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	err := checkFlags(fs.Args(), *objects, *latency, *jitter, *loss, *misbehave)
	var cacheBytes int64 // 0: auto
	if err == nil && *cache != "auto" {
		n, perr := strconv.ParseInt(*cache, 10, 64)
		if perr != nil || n < 1 || n > 1<<20 {
			err = fmt.Errorf("-cache %q: want auto or a size in MiB, 1 to %d", *cache, 1<<20)
		}
		cacheBytes = n << 20
	}
	if err == nil {
		err = checkLimits(lim)
	}
	if err == nil && *flat != "on" && *flat != "off" {
		err = fmt.Errorf("-flat %q: want on or off", *flat)
	}
	if err == nil && *peerLimits != "on" && *peerLimits != "off" {
		err = fmt.Errorf("-peer-limits %q: want on or off", *peerLimits)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ledgerpeer: %v\n", err)
		return 2
	}
	addrs, err := listenAddrs(*listen)
	if err != nil {
		fmt.Fprintf(stderr, "ledgerpeer: -listen %q: %v\n", *listen, err)
		return 2
	}
	if *cpuProfile != "" {
		stopProfile, err := profile.StartCPU(*cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "ledgerpeer: -cpuprofile: %v\n", err)
			return 1
		}
		defer func() {
			if err := stopProfile(); err != nil {
				fmt.Fprintf(stderr, "ledgerpeer: -cpuprofile: %v\n", err)
			}
		}()
	}
	served, closeServed, code := serveWhat(ctx, fs, *storeDir, *flat == "on", cacheBytes, *file, *seed, *objects, stderr)
	if code != 0 {
		return code
	}
	defer closeServed()
	limitMemory()
	var servers []*tcpnet.Server
	defer func() {
		for _, srv := range servers {
			srv.Close()
		}
	}()
	for i, addr := range addrs {
		srv, err := tcpnet.NewServer(tcpnet.ServerConfig{
			Nodes:  served.from,
			Seed:   *seed + uint64(i),
			Limits: lim,
			// Rippled's limits unless -peer-limits off.
			LimitsOff: *peerLimits == "off",
			Chatty:    *chatty,
			Behaviour: tcpnet.Behaviour{
				Latency: simnet.Uniform(*latency-*jitter, *latency+*jitter),
				Loss:    *loss,
				Faults:  tcpnet.Misbehaviour(*misbehave),
			},
		})
		if err != nil {
			fmt.Fprintf(stderr, "ledgerpeer: %v\n", err)
			return 2
		}
		servers = append(servers, srv)
		if err := srv.Listen(addr); err != nil {
			fmt.Fprintf(stderr, "ledgerpeer: -listen %q: %v\n", addr, err)
			return 1
		}
	}
	listening := make([]string, len(servers))
	for i, srv := range servers {
		listening[i] = srv.Addr()
	}
	fmt.Fprintf(stdout, "ledgerpeer: serving ledger %s (%d objects, %d nodes) on %s\n", served.root.Hex(), served.leaves, served.nodes, strings.Join(listening, ","))
	start := time.Now()
	<-ctx.Done()
	for _, srv := range servers {
		srv.Close()
	}
	for _, srv := range servers {
		on := ""
		if len(servers) > 1 {
			on = " on " + srv.Addr()
		}
		st := srv.Stats()
		fmt.Fprintf(stdout, "ledgerpeer: stopped%s after %v: %d connections, %d requests, %d replies (%d objects), %d refused, %d rejected over the connection caps, %d evicted to make room, %d timed out, %d accept errors\n",
			on, time.Since(start).Round(time.Millisecond), st.Accepted, st.Requests, st.Replies, st.Objects, st.Refused, st.Rejected, st.Evicted, st.TimedOut, st.AcceptErrors)
		r := st.Resources
		fmt.Fprintf(stdout, "ledgerpeer: as a rippled peer%s (limits %s): %d warnings, %d connections cut for their charges, %d redials refused, peak balance %d; %d queries dropped while busy, %d replies truncated, %d unknown frames skipped, %d useless frames charged, %d frames of chatter sent\n",
			on, *peerLimits, r.Warnings, r.Drops, r.Refused, r.PeakBalance, st.BusyDrops, st.Truncated, st.UnknownFrames, st.Useless, st.Chatter)
	}
	return 0
}

// checkLimits checks the limit flags: each must be positive (a zero would
// silently mean the default).
func checkLimits(l tcpnet.ServerLimits) error {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"-max-conns", int64(l.MaxConns)}, {"-max-conns-per-addr", int64(l.MaxConnsPerAddr)},
		{"-idle-timeout", int64(l.IdleTimeout)}, {"-frame-timeout", int64(l.FrameTimeout)}, {"-write-timeout", int64(l.WriteTimeout)},
		{"-max-waiting", int64(l.MaxWaiting)}, {"-max-waiting-total", int64(l.MaxWaitingTotal)},
		{"-max-waiting-objects", int64(l.MaxWaitingObjects)},
	} {
		if f.v <= 0 {
			var shown any = f.v
			if strings.HasSuffix(f.name, "timeout") {
				shown = time.Duration(f.v)
			}
			return fmt.Errorf("%s %v: want more than 0", f.name, shown)
		}
	}
	return nil
}

// checkFlags checks the values flag parsing lets through, each error naming
// its flag and the reason.
func checkFlags(extra []string, objects int, latency, jitter time.Duration, loss, misbehave float64) error {
	switch {
	case len(extra) > 0:
		return fmt.Errorf("unexpected arguments %q", extra)
	case objects < 1:
		return fmt.Errorf("-objects %d: want at least 1", objects)
	case latency < 0:
		return fmt.Errorf("-latency %v: want 0 or more", latency)
	case jitter < 0:
		return fmt.Errorf("-jitter %v: want 0 or more", jitter)
	case jitter > latency:
		return fmt.Errorf("-jitter %v: want at most -latency (%v), or some delays would be negative", jitter, latency)
	case !(loss >= 0 && loss <= 1):
		return fmt.Errorf("-loss %v: want a probability, from 0 to 1", loss)
	case !(misbehave >= 0 && misbehave <= 1):
		return fmt.Errorf("-misbehave %v: want a probability, from 0 to 1", misbehave)
	}
	return nil
}

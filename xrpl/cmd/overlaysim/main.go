// Command overlaysim simulates an overlay of nodes that all fetch the same
// new ledger from their neighbours, a few seeders holding it at the start,
// in virtual time and deterministically from -seed (package overlay). It
// compares the scheduler with adaptive limits, the scheduler with fixed
// channels, the peer set, and rippled's own acquisition, and prints per strategy when 50%, 99% and
// 100% of the fetching nodes held the verified ledger, the serving nodes'
// worst queueing delay, peak load and drops, bytes sent, duplicates and
// fairness: as tables, or as JSON with -json; -svg writes the completion
// curves. It also prints the overlay's lower bound (overlay.LowerBound):
// the earliest any strategy could have every node hold the ledger, set by
// the ledger's depth and the links' latencies. See -h for the flags.
//
//	go run ./xrpl/cmd/overlaysim -nodes 1000 -degree 8 -seed 1 -svg overlay.svg
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/overlay"
)

func main() {
	tuneGC(os.Getenv)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// Exit codes.
const (
	exitOK         = 0 // every strategy ran (complete or not: the tables say)
	exitFailed     = 1 // the ledger could not be read, or the SVG written
	exitUsage      = 2 // the command line is wrong
	progressPeriod = time.Second
)

// run is the command: it parses args, runs each strategy, prints progress
// on stderr and the results on stdout, and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "overlaysim: %v\n", err)
		return exitUsage
	}
	if o.fallback != "" {
		fmt.Fprintf(stderr, "overlaysim: %s; fetching a generated ledger of %d leaves instead (-ledger FILE or -generated N chooses)\n", o.fallback, fallbackLeaves)
	}
	l, name, err := loadLedger(o)
	if err != nil {
		fmt.Fprintf(stderr, "overlaysim: %v\n", err)
		return exitFailed
	}
	o.cfg.Ledger = l
	out := output{Ledger: name, LedgerNodes: l.Len(), LedgerBytes: l.Size()}
	bound, err := overlay.LowerBound(o.cfg)
	if err != nil {
		fmt.Fprintf(stderr, "overlaysim: %v\n", err)
		return exitUsage
	}
	out.Depth, out.BoundT100 = bound.Depth, fetch.Duration(bound.T100)
	for _, st := range o.strategies {
		cfg := o.cfg
		p := progressLine{w: stderr, strategy: st}
		cfg.Progress = p.show
		start := time.Now()
		res, err := overlay.Run(cfg, st)
		if err != nil {
			fmt.Fprintf(stderr, "\noverlaysim: %v\n", err)
			return exitUsage
		}
		p.end()
		out.Runs = append(out.Runs, strategyRun{Result: res, Wall: time.Since(start).Seconds()})
	}
	out.PeakRSS = peakRSS()
	if o.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			fmt.Fprintf(stderr, "overlaysim: %v\n", err)
			return exitFailed
		}
	} else {
		writeTable(stdout, o, out)
	}
	if o.svg != "" {
		if err := writeSVG(o.svg, o, out); err != nil {
			fmt.Fprintf(stderr, "overlaysim: -svg: %v\n", err)
			return exitFailed
		}
	}
	return exitOK
}

// loadLedger returns the ledger to fetch and a name for it.
func loadLedger(o options) (*ledger.Ledger, string, error) {
	if o.generated > 0 {
		l, err := ledger.Generate(o.cfg.Seed, o.generated)
		if err != nil {
			return nil, "", fmt.Errorf("-generated %d: %w", o.generated, err)
		}
		return l, fmt.Sprintf("generated (%d leaves, seed %d)", o.generated, o.cfg.Seed), nil
	}
	l, _, err := ledger.LoadFile(o.ledger)
	if err != nil {
		return nil, "", fmt.Errorf("-ledger %s: %w (the real ledgers live in ../shared/ledgers beside the repository; -generated N fetches a generated one instead)", o.ledger, err)
	}
	return l, filepath.Base(o.ledger), nil
}

// progressLine shows one strategy's progress on one line of stderr,
// rewritten at most every progressPeriod of wall time.
type progressLine struct {
	w        io.Writer
	strategy overlay.Strategy
	last     time.Time
	shown    bool
}

func (p *progressLine) show(pr overlay.Progress) {
	if now := time.Now(); now.Sub(p.last) >= progressPeriod || pr.Completed == pr.Fetching {
		p.last, p.shown = now, true
		fmt.Fprintf(p.w, "\r%s: %d of %d nodes done at %.2fs virtual   ", pr.Strategy, pr.Completed, pr.Fetching, pr.Virtual.Seconds())
	}
}

func (p *progressLine) end() {
	if p.shown {
		fmt.Fprintln(p.w)
	}
}

// peakRSS returns the process's peak resident memory in bytes (Linux's
// VmHWM), or 0 where it cannot tell.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb int64
	for line := range strings.Lines(string(b)) {
		if _, err := fmt.Sscanf(strings.TrimSuffix(line, "\n"), "VmHWM: %d kB", &kb); err == nil {
			return kb * 1024
		}
	}
	return 0
}

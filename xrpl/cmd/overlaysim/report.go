package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/internal/svgplot"
	"github.com/peersched/peersched/xrpl/overlay"
)

// output is everything the command reports; -json prints it as is.
type output struct {
	Ledger      string `json:"ledger"`
	LedgerNodes int    `json:"ledger_nodes"`
	LedgerBytes int64  `json:"ledger_bytes"`
	// Depth and BoundT100 are overlay.LowerBound's: the ledger's longest
	// root-to-leaf path, and the earliest any strategy could have every
	// fetching node hold the ledger.
	Depth     int            `json:"ledger_depth"`
	BoundT100 fetch.Duration `json:"bound_t100_seconds"`
	Runs      []strategyRun  `json:"runs"`
	PeakRSS   int64          `json:"peak_rss_bytes"` // of the whole process, every run
}

// strategyRun is one strategy's Result and the wall time it took.
type strategyRun struct {
	overlay.Result
	Wall float64 `json:"wall_seconds"`
}

// name is a run's column heading.
func name(o options, st overlay.Strategy) string {
	switch st {
	case overlay.Adaptive:
		return "scheduler (adaptive)"
	case overlay.Fixed:
		return fmt.Sprintf("fixed %d channels", o.cfg.Channels)
	case overlay.PeerSet:
		return fmt.Sprintf("peer set (%d channels)", o.cfg.Channels)
	case overlay.Rippled:
		return "rippled (5 peers, +3 per 3s idle)"
	}
	return string(st)
}

// seeders returns how many seeders the runs had: -seeders, or without it
// the overlay's default, which only a run reports (o.cfg.Seeders is 0).
func seeders(o options, out output) int {
	if len(out.Runs) > 0 {
		return out.Runs[0].Seeders
	}
	return o.cfg.Seeders
}

// writeTable prints the runs side by side, one column per strategy.
func writeTable(w io.Writer, o options, out output) {
	c, svc := o.cfg, o.cfg.Service
	fmt.Fprintf(w, "overlay: %d nodes, degree %d, %d seeders, seed %d; ledger %s, %d nodes, %d bytes\n",
		c.Nodes, c.Degree, seeders(o, out), c.Seed, out.Ledger, out.LedgerNodes, out.LedgerBytes)
	limits := "on"
	if c.LimitsOff {
		limits = "off"
	}
	waiting := fmt.Sprintf("%d waiting at most (%v beyond)", svc.QueueLimit, svc.Overflow)
	if svc.QueueLimit == 0 {
		waiting = "no limit on requests waiting"
	}
	fmt.Fprintf(w, "links %v–%v one way; each node serves with %d workers, %v per request + %v per object, %s; batch %d; time limit %v; rippled's peer limits %s\n\n",
		c.MinLatency, c.MaxLatency, svc.Workers, svc.PerRequest, svc.PerObject, waiting, c.Batch, c.TimeLimit, limits)
	fmt.Fprintf(w, "lower bound: no strategy has every node done before %s (the ledger is %d levels deep: %d round trips one after another, each to the neighbour that could answer soonest)\n\n",
		seconds(time.Duration(out.BoundT100)), out.Depth, out.Depth+1)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(label string, cell func(r strategyRun) string) {
		fmt.Fprint(tw, label+"\t")
		for _, r := range out.Runs {
			fmt.Fprint(tw, cell(r)+"\t")
		}
		fmt.Fprintln(tw)
	}
	row("", func(r strategyRun) string { return name(o, r.Strategy) })
	row("nodes done", func(r strategyRun) string { return fmt.Sprintf("%d / %d", r.Completed, r.Fetching) })
	for k, label := range []string{"time to 50%", "time to 99%", "time to 100%"} {
		row(label, func(r strategyRun) string {
			if !r.Reached[k] {
				return "not reached"
			}
			return seconds([]time.Duration{time.Duration(r.T50), time.Duration(r.T99), time.Duration(r.T100)}[k])
		})
	}
	row("worst queueing delay", func(r strategyRun) string {
		return time.Duration(r.WorstQueueDelay).Round(10 * time.Microsecond).String()
	})
	row("peak requests waiting", func(r strategyRun) string { return fmt.Sprint(r.PeakWaiting) })
	row("requests dropped (overload)", func(r strategyRun) string { return fmt.Sprint(r.Dropped) })
	row("requests sent", func(r strategyRun) string { return fmt.Sprint(r.Requests) })
	row("timeouts", func(r strategyRun) string { return fmt.Sprint(r.Timeouts) })
	row("neighbours judged useless", func(r strategyRun) string { return fmt.Sprint(r.Useless) })
	row("peer warnings (rippled's, at 5,000)", func(r strategyRun) string { return fmt.Sprint(r.PeerWarnings) })
	row("links cut by peers for charges", func(r strategyRun) string { return fmt.Sprint(r.PeerDrops) })
	row("redials refused while cut off", func(r strategyRun) string { return fmt.Sprint(r.PeerRefused) })
	row("queries dropped by busy peers", func(r strategyRun) string { return fmt.Sprint(r.QueriesDropped) })
	row("peak balance at a peer", func(r strategyRun) string { return fmt.Sprint(r.PeerBalancePeak) })
	row("bytes sent per node (mean)", func(r strategyRun) string { return byteCount(r.BytesPerNode) })
	row("bytes sent, busiest node", func(r strategyRun) string { return byteCount(float64(r.MaxBytesSent)) })
	row("duplicate objects received", func(r strategyRun) string { return fmt.Sprintf("%.3f%%", 100*r.DuplicateShare) })
	row("fairness (Jain, completion times)", func(r strategyRun) string { return fmt.Sprintf("%.3f", r.Fairness) })
	row("wall time", func(r strategyRun) string { return fmt.Sprintf("%.1fs", r.Wall) })
	tw.Flush()
	if out.PeakRSS > 0 {
		fmt.Fprintf(w, "\npeak memory (RSS) %s\n", byteCount(float64(out.PeakRSS)))
	}
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// byteCount renders a byte count in kB, MB or GB (powers of 1000).
func byteCount(n float64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", n/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.2f MB", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", n/1e3)
	}
	return fmt.Sprintf("%.0f B", n)
}

// writeSVG writes the completion curves, one line per strategy, to path.
func writeSVG(path string, o options, out output) error {
	chart := svgplot.Chart{
		Title:  fmt.Sprintf("%d nodes, degree %d, %d seeders, seed %d: %s", o.cfg.Nodes, o.cfg.Degree, seeders(o, out), o.cfg.Seed, out.Ledger),
		XLabel: "virtual time (s)",
		YLabel: "fraction of fetching nodes done",
		YMax:   1,
	}
	// The x axis ends a quarter past the last completion: a fetch that
	// never completes would otherwise squeeze every curve against the left
	// edge of a plot as long as the time limit. The lines run on, flat, to
	// the right edge.
	last := 0.0
	for _, r := range out.Runs {
		if n := len(r.Curve); n > 0 {
			last = max(last, time.Duration(r.Curve[n-1].At).Seconds())
		}
	}
	if last > 0 {
		chart.XMax = 1.25 * last
	}
	for _, r := range out.Runs {
		label := fmt.Sprintf("%s: %d of %d done", name(o, r.Strategy), r.Completed, r.Fetching)
		s := svgplot.Series{Name: label, Points: []svgplot.Point{{X: 0, Y: 0}}}
		for _, p := range r.Curve {
			s.Points = append(s.Points, svgplot.Point{X: time.Duration(p.At).Seconds(), Y: p.Fraction})
		}
		// The line runs on to the end of the simulation, flat if not all
		// completed.
		last := s.Points[len(s.Points)-1]
		if end := time.Duration(r.Virtual).Seconds(); end > last.X {
			s.Points = append(s.Points, svgplot.Point{X: end, Y: last.Y})
		}
		chart.Series = append(chart.Series, s)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := chart.Write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

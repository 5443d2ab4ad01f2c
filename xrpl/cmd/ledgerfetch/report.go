package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/node"
)

// result is one fetch's report with the setup it ran in, as printed and as
// encoded by -json (the Report's fields appear at the top level).
type result struct {
	fetch.Report
	Transport string            `json:"transport"`
	PeerCount int               `json:"peer_count"` // peers configured
	Channels  int               `json:"channels"`   // per peer; 0: each peer's limit adapted (the scheduler's default)
	Batch     int               `json:"batch"`
	Seed      uint64            `json:"seed"`
	Roles     map[string]string `json:"roles,omitempty"` // in-process peers' roles
	Chaos     bool              `json:"chaos"`           // -chaos: peers were killed and restarted at random
	// Events is, by peer, what -chaos did to it and how often the host saw
	// it disconnect, until the fetch ended; peers nothing happened to are
	// left out.
	Events map[string]peerCounts `json:"peer_events,omitempty"`
	Error  string                `json:"error,omitempty"`

	// What the peers said of us (see peerSaid), in total (its fields at
	// the top level) and by peer (peers that said nothing left out);
	// PeerLimits says whether the in-process peers had rippled's limits
	// on ("on", "off"; "theirs" for external peers), and PeerCounters
	// where the counts come from.
	peerSaid
	PeersSaid    map[string]peerSaid `json:"peers_said,omitempty"`
	PeerLimits   string              `json:"peer_limits"`
	PeerCounters string              `json:"peer_counters"`

	// For a real ledger (-ledger): the file, the ledger, and whether the
	// state rebuilt from the fetched (and reused) nodes has its
	// account_hash.
	LedgerFile  string `json:"ledger_file,omitempty"`
	LedgerIndex uint32 `json:"ledger_index,omitempty"`
	AccountHash string `json:"account_hash,omitempty"`
	RebuiltRoot string `json:"rebuilt_root,omitempty"`
	Verified    *bool  `json:"account_hash_verified,omitempty"`
	VerifyError string `json:"verify_error,omitempty"`
	// For an incremental fetch (-base): the ledger it started from.
	BaseFile  string `json:"base_file,omitempty"`
	BaseIndex uint32 `json:"base_ledger_index,omitempty"`
	// With -store: the directory the objects were kept in (Resumed says
	// how many a fetch found there as it began).
	StoreDir string `json:"store_dir,omitempty"`
	// How long merging the store's files took, outside the fetch's wall
	// time: what a killed fetch left, before resuming, and what a complete
	// fetch wrote, after it (see nodeStore.compact).
	StoreCompaction fetch.Duration `json:"store_compaction_seconds,omitempty"`

	// Components are the fetch and the components that ran beside it
	// (-lookups, -relay), a row each; absent when none ran.
	Components []node.ComponentReport `json:"components,omitempty"`

	roleByPeer map[peer.ID]role
}

// checkAccountHash rebuilds the state map from the nodes the fetch stored
// and the base's (see rebuild) and records whether its root is the real
// ledger's account_hash. An incomplete fetch is not checked: it fails
// anyway.
func (r *result) checkAccountHash(o options, src source, got fetch.Store, complete bool) {
	r.LedgerFile, r.LedgerIndex, r.AccountHash = o.ledger, src.header.Seq, strings.ToUpper(src.header.AccountHash.Hex())
	if src.base != nil {
		r.BaseFile, r.BaseIndex = o.base, src.baseHd.Seq
	}
	if !complete {
		return
	}
	var base fetch.Store
	if src.base != nil {
		base = src.base
	}
	ok := false
	root, err := rebuild(got, src.ledger.Root(), base)
	switch {
	case err != nil:
		r.VerifyError = fmt.Sprintf("cannot rebuild the state map: %v", err)
	case root != src.header.AccountHash:
		r.VerifyError = fmt.Sprintf("the fetched state rebuilds to %s, not the account_hash %s", strings.ToUpper(root.Hex()), r.AccountHash)
	default:
		ok = true
	}
	if err == nil {
		r.RebuiltRoot = strings.ToUpper(root.Hex())
	}
	r.Verified = &ok
}

// newResult completes rep with the setup o describes.
func newResult(rep fetch.Report, o options, roles map[peer.ID]role, events map[string]peerCounts, err error) result {
	r := result{Report: rep, Transport: o.transport, PeerCount: o.peers, Channels: o.channels, Batch: o.batch, Seed: o.seed,
		Chaos: o.chaos, Events: events, roleByPeer: roles}
	switch rep.Strategy {
	case "peerset":
		r.Channels = o.peerChannels() // the peer set's channels are always fixed
	case "rippled":
		r.Channels, r.Batch = 1, rippledBatch // one request per peer, of up to 128 hashes
	}
	if o.connect != nil {
		r.Transport = "tcp (external peers)"
	}
	if len(roles) > 0 {
		r.Roles = map[string]string{}
		for id, ro := range roles {
			r.Roles[string(id)] = string(ro)
		}
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// writeReport prints r for people.
func writeReport(w io.Writer, r result) {
	verdict := "fetched"
	if !r.Complete {
		verdict = "INCOMPLETE: fetched"
	}
	total := r.Expected
	if total == 0 {
		total = r.Known
	}
	fmt.Fprintf(w, "%s %s of %s objects (%s) in %s: %s objects/s\n",
		verdict, commas(r.Objects), commas(total), size(r.Bytes), dur(time.Duration(r.Wall)), commas(int(r.Rate)))
	channels := "adaptive limits"
	if r.Channels > 0 {
		channels = fmt.Sprintf("%d channels", r.Channels)
	}
	batch := fmt.Sprintf("batch %d", r.Batch)
	if r.Batch == 0 {
		batch = "batch chosen"
	}
	fmt.Fprintf(w, "  strategy %s, transport %s, %d peers x %s, %s (mean %.1f), seed %d\n",
		r.Strategy, r.Transport, r.PeerCount, channels, batch, r.BatchMean, r.Seed)
	fmt.Fprintf(w, "  root         %s\n", r.Root)
	if r.LedgerFile != "" {
		verdict := "not checked: the fetch is incomplete"
		switch {
		case r.Verified == nil:
		case *r.Verified:
			verdict = "verified: the fetched state rebuilds to it"
		default:
			verdict = "NOT VERIFIED: " + r.VerifyError
		}
		fmt.Fprintf(w, "  ledger       %d (%s): account_hash %s %s\n", r.LedgerIndex, r.LedgerFile, r.AccountHash, verdict)
	}
	if r.BaseFile != "" {
		fmt.Fprintf(w, "  base         %d (%s): %s objects reused (%s), %s fetched\n",
			r.BaseIndex, r.BaseFile, commas(r.Reused), size(r.ReusedBytes), commas(r.Objects))
	}
	if r.StoreDir != "" || r.Resumed > 0 {
		merged := ""
		if r.StoreCompaction > 0 {
			merged = fmt.Sprintf(", its files merged in %s", time.Duration(r.StoreCompaction).Round(time.Millisecond))
		}
		fmt.Fprintf(w, "  store        %s: %s objects resumed from it, %s fetched%s\n", r.StoreDir, commas(r.Resumed), commas(r.Objects), merged)
	}
	fmt.Fprintf(w, "  requests     %s sent, %s answered, %s hedges at the tail\n", commas(r.Requests), commas(r.Answered), commas(r.Hedges))
	fmt.Fprintf(w, "  failures     %s timed out, %s refused by busy peers, %s by disconnection, %s of the wrong type, %s sends refused\n",
		commas(r.Timeouts), commas(r.Refused), commas(r.Disconnects), commas(r.BadResponses), commas(r.SendErrors))
	fmt.Fprintf(w, "  asked again  %s objects (%s missing, %s corrupt, the rest in failed requests)\n",
		commas(r.Retries), commas(r.Missing), commas(r.Corrupt))
	writeEvents(w, r)
	writeSaid(w, r)
	d := r.Dropped
	fmt.Fprintf(w, "  dropped      %s duplicate, %s late, %s of the wrong type, %s spoofed (%s wrong peer, %s unknown ID) responses\n",
		commas(d.Duplicate), commas(d.Late), commas(d.WrongType), commas(d.Spoofed), commas(d.WrongPeer), commas(d.Unknown))
	for _, u := range r.Useless {
		fmt.Fprintf(w, "  disconnected %s: %s\n", u.ID, u.Reason)
	}
	for _, p := range r.Lacking {
		fmt.Fprintf(w, "  benched      %s: %s\n", p.ID, p.Reason())
	}
	if r.Bound > 0 {
		perRequest := float64(r.Batch)
		if r.Batch == 0 {
			perRequest = r.BatchMean
		}
		fmt.Fprintf(w, "  utilisation  %.0f%% of %.1f channels (the peers', mean over the fetch) x %.0f objects / %s mean RTT = %s objects/s, the most those channels carry\n",
			100*r.Utilisation, r.Report.Channels, perRequest, dur(time.Duration(r.MeanRTT)), commas(int(r.Bound)))
	}
	writeComponents(w, r)
	fmt.Fprintf(w, "\n  %-22s %-9s %8s %8s %8s %9s %9s %9s %6s\n", "peer", "role", "requests", "failures", "bad objs", "p50", "p99", "objects", "share")
	for _, p := range r.Peers {
		ro := r.roleByPeer[peer.ID(p.ID)]
		if ro == "" {
			ro = "-"
		}
		fmt.Fprintf(w, "  %-22s %-9s %8s %8s %8s %9s %9s %9s %5.1f%%\n", p.ID, ro, commas(p.Requests), commas(p.Failures),
			commas(p.BadObjects), dur(time.Duration(p.P50)), dur(time.Duration(p.P99)), commas(p.Objects), 100*p.Share)
	}
}

// reasons writes why a peer's connections ended, most frequent first, as
// " (frame over the cap 12, peer closed 1)"; "" for none.
func reasons(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	names := slices.Sorted(maps.Keys(by))
	slices.SortStableFunc(names, func(a, b string) int { return by[b] - by[a] })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %s", n, commas(by[n]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeEvents prints what -chaos did to each peer, and the disconnections
// the host saw, which cause the failures "by disconnection".
func writeEvents(w io.Writer, r result) {
	var total peerCounts
	for _, c := range r.Events {
		total.Kills += c.Kills
		total.Restarts += c.Restarts
		total.FailedRestarts += c.FailedRestarts
		total.Disconnections += c.Disconnections
	}
	if r.Chaos {
		fmt.Fprintf(w, "  chaos        %s kills and %s restarts injected (%s failed); the host saw %s disconnections, which failed %s requests\n",
			commas(total.Kills), commas(total.Restarts), commas(total.FailedRestarts), commas(total.Disconnections), commas(r.Disconnects))
	} else if len(r.Events) > 0 {
		fmt.Fprintf(w, "  disconnects  the host saw %s disconnections, which failed %s requests\n", commas(total.Disconnections), commas(r.Disconnects))
	}
	for _, id := range sortedPeers(r.Events) {
		c := r.Events[id]
		if r.Chaos {
			fmt.Fprintf(w, "    %-22s killed %d, restarted %d, failed to restart %d, disconnected %d%s\n", id, c.Kills, c.Restarts, c.FailedRestarts, c.Disconnections, reasons(c.Reasons))
		} else {
			fmt.Fprintf(w, "    %-22s disconnected %d%s\n", id, c.Disconnections, reasons(c.Reasons))
		}
	}
}

// jsonReport is what -json prints, whatever the strategy: every run's
// result, in the order they ran, and, when several ran (-strategy both or
// all), how they compare.
type jsonReport struct {
	Runs       []result    `json:"runs"`
	Comparison *comparison `json:"comparison,omitempty"`
}

func newJSONReport(results []result) jsonReport {
	return jsonReport{Runs: results, Comparison: compare(results)}
}

// rippledBatch is the most hashes a request of the rippled strategy asks
// for (one sent in reaction to a useful reply; blind, 12), as its report
// shows it.
const rippledBatch = 128

// comparison is how fetches of the same ledger from the same peers
// compare: each one's wall time and rate, in the order they ran, and how
// many times the first one's rate each one's is.
type comparison struct {
	Strategies []string         `json:"strategies"`
	Wall       []fetch.Duration `json:"wall_seconds"`
	Rate       []float64        `json:"objects_per_second"`
	// Speedup is Rate[0] / Rate[1]; absent unless both completed.
	Speedup float64 `json:"speedup,omitempty"`
	// Speedups holds Rate[0] / Rate[i] for each run (1 for the first); 0
	// where either did not complete.
	Speedups []float64 `json:"speedups"`
}

// compare returns the comparison of results, or nil unless there are
// several.
func compare(results []result) *comparison {
	if len(results) < 2 {
		return nil
	}
	c := &comparison{}
	for _, r := range results {
		c.Strategies = append(c.Strategies, r.Strategy)
		c.Wall = append(c.Wall, r.Wall)
		c.Rate = append(c.Rate, r.Rate)
		speedup := 0.0
		if results[0].Complete && r.Complete && r.Rate > 0 {
			speedup = results[0].Rate / r.Rate
		}
		c.Speedups = append(c.Speedups, speedup)
	}
	c.Speedup = c.Speedups[1]
	return c
}

// writeComparison prints how the strategies' fetches compare: one line for
// two, a table for more.
func writeComparison(w io.Writer, results []result) {
	c := compare(results)
	if c == nil {
		return
	}
	if len(results) == 2 {
		fmt.Fprintf(w, "\ncomparison, same ledger and peers: %s %s (%s objects/s), %s %s (%s objects/s)",
			c.Strategies[0], dur(time.Duration(c.Wall[0])), commas(int(c.Rate[0])), c.Strategies[1], dur(time.Duration(c.Wall[1])), commas(int(c.Rate[1])))
		if c.Speedup > 0 {
			fmt.Fprintf(w, ": %s is %.1fx as fast\n", c.Strategies[0], c.Speedup)
		} else {
			fmt.Fprintln(w)
		}
		return
	}
	fmt.Fprintf(w, "\ncomparison, same ledger and peers:\n  %-10s %9s %12s  %s\n", "strategy", "wall", "objects/s", c.Strategies[0]+" is")
	for i, s := range c.Strategies {
		verdict := "-"
		switch {
		case !results[i].Complete:
			verdict = "(incomplete)"
		case i > 0 && c.Speedups[i] > 0:
			verdict = fmt.Sprintf("%.1fx as fast", c.Speedups[i])
		}
		fmt.Fprintf(w, "  %-10s %9s %12s  %s\n", s, dur(time.Duration(c.Wall[i])), commas(int(c.Rate[i])), verdict)
	}
}

// size formats a byte count in MB, or in KB below one MB.
func size(n int64) string {
	if n < 1e6 {
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

// dur formats d with about three significant digits.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "-"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/1e6)
	case d < time.Second:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.2fs", d.Seconds())
}

package overlay

import (
	"slices"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
)

// Result is what one strategy did to one overlay. Durations are virtual
// time from the start, and encode to JSON as seconds.
type Result struct {
	Strategy Strategy `json:"strategy"`
	Nodes    int      `json:"nodes"`
	Degree   int      `json:"degree"`
	Seeders  int      `json:"seeders"`
	Seed     uint64   `json:"seed"`
	Objects  int      `json:"ledger_nodes"` // nodes of the ledger fetched

	// Fetching is the number of nodes that fetch (all but the seeders);
	// Completed of them hold the verified ledger at the end.
	Fetching  int `json:"fetching"`
	Completed int `json:"completed"`
	// T50, T99 and T100 are when half, 99% and all of the fetching nodes
	// held the verified ledger; Reached says which were reached within
	// the time limit (a time not reached is 0).
	T50     fetch.Duration `json:"t50_seconds"`
	T99     fetch.Duration `json:"t99_seconds"`
	T100    fetch.Duration `json:"t100_seconds"`
	Reached [3]bool        `json:"reached"`
	// Virtual is when the simulation ended.
	Virtual fetch.Duration `json:"virtual_seconds"`

	// WorstQueueDelay is the longest any request waited for a worker at
	// any serving node; PeakWaiting the most requests ever waiting at one
	// node; Served the requests admitted to service queues and Dropped
	// those turned away by full ones (dropped or refused, as the service's
	// Overflow says).
	WorstQueueDelay fetch.Duration `json:"worst_queue_delay_seconds"`
	PeakWaiting     int            `json:"peak_waiting"`
	Served          int            `json:"served"`
	Dropped         int            `json:"dropped"`
	// Requests, Timeouts, Refused and Hedges add up the fetches' reports.
	Requests int `json:"requests"`
	Timeouts int `json:"timeouts"`
	Refused  int `json:"refused"`
	Hedges   int `json:"hedges"`
	// Useless counts the neighbours the fetches judged useless and stopped
	// asking (fetch.Report.Useless), summed over the fetching nodes; a
	// neighbour judged by two nodes counts twice.
	Useless int `json:"useless"`

	// What the serving nodes, rippled peers by default, said of their
	// neighbours' queries (Config.LimitsOff turns the cuts and drops off):
	// the warnings they counted, the links they cut for their charges, the
	// redials they refused while cut off, the queries they dropped because
	// an answer queue was long, and the highest balance any neighbour
	// reached at any node.
	PeerWarnings    int64 `json:"peer_warnings"`
	PeerDrops       int64 `json:"peer_drops"`
	PeerRefused     int64 `json:"peer_redials_refused"`
	QueriesDropped  int   `json:"queries_dropped_by_peers"`
	PeerBalancePeak int64 `json:"peer_balance_peak"`

	// BytesPerNode is the mean of the object bytes each node sent in its
	// answers, over every node; MaxBytesSent the most one node sent.
	BytesPerNode float64 `json:"bytes_sent_per_node"`
	MaxBytesSent int64   `json:"max_bytes_sent"`
	// Received counts the objects delivered to fetching nodes, and
	// DuplicateShare the share of them that the node already held.
	Received       int     `json:"objects_received"`
	Duplicates     int     `json:"duplicates"`
	DuplicateShare float64 `json:"duplicate_share"`
	// Fairness is Jain's index of the completion times of the fetching
	// nodes that completed (1 if none did).
	Fairness float64 `json:"fairness"`

	// Curve is the completion curve: after each completion, the share of
	// the fetching nodes that have completed.
	Curve []CurvePoint `json:"curve"`
	// Failures counts the fetches that returned an error (none complete).
	Failures int `json:"failures"`
}

// CurvePoint is one step of a completion curve.
type CurvePoint struct {
	At       fetch.Duration `json:"at_seconds"`
	Fraction float64        `json:"fraction"`
}

// result gathers the Result once every fetch has returned.
func (s *simulation) result() Result {
	r := Result{
		Strategy: s.strategy,
		Nodes:    s.cfg.Nodes,
		Degree:   s.cfg.Degree,
		Seeders:  s.cfg.Seeders,
		Seed:     s.cfg.Seed,
		Objects:  s.cfg.Ledger.Len(),
		Fetching: s.fetchers,
		Virtual:  fetch.Duration(s.clock.Now().Sub(epoch)),
	}
	var times []time.Duration
	var total int64
	for _, n := range s.nodes {
		total += n.bytesSent
		r.MaxBytesSent = max(r.MaxBytesSent, n.bytesSent)
		r.Served += n.served
		r.Dropped += n.dropped
		r.PeakWaiting = max(r.PeakWaiting, n.peakWaiting)
		r.WorstQueueDelay = max(r.WorstQueueDelay, fetch.Duration(n.worstWait))
		acc := n.accounts.Stats()
		r.PeerWarnings += acc.Warnings
		r.PeerDrops += acc.Drops
		r.PeerRefused += acc.Refused
		r.PeerBalancePeak = max(r.PeerBalancePeak, acc.PeakBalance)
		r.QueriesDropped += n.busyDrops
		if n.seeder {
			continue
		}
		r.Received += n.received
		r.Duplicates += n.duplicates
		r.Requests += n.report.Requests
		r.Timeouts += n.report.Timeouts
		r.Refused += n.report.Refused
		r.Hedges += n.report.Hedges
		r.Useless += len(n.report.Useless)
		if n.err != nil {
			r.Failures++
		}
		// Verified: the fetch says so, and the node holds every node.
		if n.completed && n.err == nil && n.report.Complete && n.holds.count() == r.Objects {
			r.Completed++
			times = append(times, n.doneAt)
		}
	}
	r.BytesPerNode = float64(total) / float64(len(s.nodes))
	if r.Received > 0 {
		r.DuplicateShare = float64(r.Duplicates) / float64(r.Received)
	}
	slices.Sort(times)
	for k, p := range []float64{0.5, 0.99, 1} {
		t, ok := timeToShare(times, r.Fetching, p)
		r.Reached[k] = ok
		*[]*fetch.Duration{&r.T50, &r.T99, &r.T100}[k] = fetch.Duration(t)
	}
	xs := make([]float64, len(times))
	for i, t := range times {
		xs[i] = t.Seconds()
		r.Curve = append(r.Curve, CurvePoint{At: fetch.Duration(t), Fraction: float64(i+1) / float64(r.Fetching)})
	}
	r.Fairness = jainIndex(xs)
	return r
}

package node

import (
	"slices"
	"sync"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
)

// ComponentReport is what one component did: one row of the node's table.
// Its JSON form uses the names in the struct tags; durations are in
// seconds.
type ComponentReport struct {
	// Name is "fetch", "lookups" or "relay".
	Name string `json:"name"`
	// Way is "scheduler" (one shared scheduler) or "own peers" (the old
	// way: the component's own peer set, IDs and timers).
	Way string `json:"way"`
	// Priority is the component's scheduler priority; higher goes first.
	// The old way has none, and says the priority it would have.
	Priority int `json:"priority"`
	// Requests is the messages the component sent: requests (lookups'
	// retries included), or notifications (relay).
	Requests int `json:"requests"`
	// Done is what completed: lookups answered with their entry, or
	// notifications sent; for the fetch, requests answered.
	Done int `json:"done"`
	// Failed is what did not: lookups that got no entry after every try
	// (a try whose every send failed is spent too), notifications skipped
	// because the previous one to that peer still waited (see Relay) or
	// whose send failed, messages the scheduler (or the router) would not
	// take, and fetch requests that failed.
	Failed int `json:"failed"`
	// P50 and P99 are the latency's median and 99th percentile: for a
	// lookup, from the moment it was wanted to its answer; for a
	// notification, from the moment it was wanted to its send (it has no
	// answer); for the fetch, each request's response time (its sender
	// always waits, so the wait is not the request's).
	P50 fetch.Duration `json:"p50_seconds"`
	P99 fetch.Duration `json:"p99_seconds"`
	// QueueMean and QueueP99 are the time spent waiting in the scheduler's
	// queue, from being wanted to being sent (a lookup's tries added up):
	// 0 the old way, which sends at once.
	QueueMean fetch.Duration `json:"queue_mean_seconds"`
	QueueP99  fetch.Duration `json:"queue_p99_seconds"`
	// Throughput is Done per second of the component's run, or for the
	// fetch its verified objects per second; Unit says which.
	Throughput float64 `json:"throughput"`
	Unit       string  `json:"unit"`
}

// recorder collects one component's measurements. It is safe for
// concurrent use.
type recorder struct {
	mu       sync.Mutex
	requests int
	done     int
	failed   int
	latency  []time.Duration
	queued   []time.Duration
}

// sent counts a message sent.
func (r *recorder) sent() {
	r.mu.Lock()
	r.requests++
	r.mu.Unlock()
}

// completed records something completed after latency, of which it waited
// queued in the scheduler's queue.
func (r *recorder) completed(latency, queued time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.done++
	r.latency = append(r.latency, latency)
	r.queued = append(r.queued, queued)
}

// failure counts something that did not complete.
func (r *recorder) failure() {
	r.mu.Lock()
	r.failed++
	r.mu.Unlock()
}

// report returns the recorder's row, over a run of wall.
func (r *recorder) report(name, way string, priority int, unit string, wall time.Duration) ComponentReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	lat, q := sorted(r.latency), sorted(r.queued)
	c := ComponentReport{
		Name: name, Way: way, Priority: priority, Unit: unit,
		Requests: r.requests, Done: r.done, Failed: r.failed,
		P50: fetch.Duration(quantile(lat, 0.5)), P99: fetch.Duration(quantile(lat, 0.99)),
		QueueMean: fetch.Duration(mean(q)), QueueP99: fetch.Duration(quantile(q, 0.99)),
	}
	if wall > 0 {
		c.Throughput = float64(r.done) / wall.Seconds()
	}
	return c
}

// FetchReport is the fetch's row, from its Report.
func FetchReport(way string, priority int, rep fetch.Report) ComponentReport {
	return ComponentReport{
		Name: "fetch", Way: way, Priority: priority, Unit: "objects/s",
		Requests: rep.Requests, Done: rep.Answered, Failed: rep.Timeouts + rep.Refused + rep.Disconnects,
		P50: rep.P50RTT, P99: rep.P99RTT, Throughput: rep.Rate,
	}
}

func sorted(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}

// quantile returns the q-quantile of sorted (nearest rank), 0 if empty.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*q + 0.999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// Package promexport exposes a peersched scheduler's counters, gauges and
// response-time histograms to Prometheus, as a prometheus.Collector.
//
// It is a module of its own, so that the scheduler's module does not
// depend on the Prometheus client: only a program that imports this
// package does.
//
// The collector reads Scheduler.Stats, Scheduler.PeerStats and
// Scheduler.PeerUsage when it is scraped, and at no other time: between
// scrapes it costs nothing, and the scheduler's own counting is a few
// increments per request, under a lock it holds anyway.
//
// # Metrics
//
// With the default namespace, "peersched", the scheduler as a whole has:
//
//	peersched_peers                        gauge: connected peers
//	peersched_channels_open                gauge
//	peersched_channels_closed              gauge: messages in flight
//	peersched_senders_waiting              gauge
//	peersched_senders_parked               gauge: waiting senders parked until they ask again
//	peersched_requests_in_flight           gauge
//	peersched_stopped                      gauge: 1 once stopped
//	peersched_requests_sent_total          counter
//	peersched_notifications_sent_total     counter
//	peersched_send_errors_total            counter: sends the host refused or panicked on
//	peersched_requests_ended_total         counter, by outcome
//	peersched_responses_dropped_total      counter, by reason
//	peersched_panics_handled_total         counter
//	peersched_request_ids_reused_early_total counter: IDs issued while quarantined (Config.RequestIDs too small)
//	peersched_response_time_seconds        histogram
//
// and each peer, labelled peer="<ID>":
//
//	peersched_peer_connected                       gauge: 1, or 0 for a departed peer still kept
//	peersched_peer_requests_sent_total             counter
//	peersched_peer_notifications_sent_total        counter
//	peersched_peer_send_errors_total               counter
//	peersched_peer_requests_ended_total            counter, by outcome
//	peersched_peer_responses_dropped_total         counter, by reason
//	peersched_peer_response_time_seconds           histogram
//	peersched_peer_channels_open                   gauge (connected peers only)
//	peersched_peer_in_flight                       gauge (connected peers only)
//	peersched_peer_limit                           gauge (connected peers only)
//	peersched_peer_smoothed_rtt_seconds            gauge (connected peers only)
//
// The outcome label is one of answered, timeout, refused, disconnected,
// shutdown and withdrawn (a withdrawn request whose channel reopened); the
// reason label one of late, unknown, wrong_peer, duplicate and wrong_type. The
// histograms' buckets are scheduler.HistogramBounds, in seconds.
//
// The peers' series have names of their own, not the scheduler's names
// with a peer label, so that a sum over the peer label never counts twice.
// The scheduler-wide counters are the totals to use: a peer's series end
// when it is forgotten, while the totals keep its counts.
//
// # A peer that leaves and comes back
//
// A Prometheus counter must not go down. A peer's counters go on across a
// disconnection and a reconnection while the scheduler keeps them (see
// scheduler.Config.KeepDepartedPeers), and its series stay exported, with
// peersched_peer_connected at 0, meanwhile. Once forgotten, its series
// vanish, and if it comes back its counters start again from zero: every
// per-peer counter and histogram carries its created timestamp
// (scheduler.PeerStats.Since), later for the new counters, which tells a
// restart apart from a decrease to a scraper that reads created
// timestamps; without them, Prometheus treats the drop as a counter reset,
// as it does when a process restarts.
package promexport

import (
	"encoding/hex"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
)

// Options configures a Collector. The zero Options is valid.
type Options struct {
	// Namespace is the first part of every metric's name; "" means
	// "peersched".
	Namespace string
	// ConstLabels are added to every metric, for instance to tell apart
	// several schedulers registered in one registry.
	ConstLabels prometheus.Labels
	// NoPeers leaves out the per-peer metrics, which number about forty
	// series per peer, for a node with many peers.
	NoPeers bool
	// PeerLabel turns a peer's ID into its peer label's value. Nil means
	// the ID itself when it is valid UTF-8, as Prometheus requires, and
	// "0x" followed by its bytes in hexadecimal otherwise. Two peers must
	// not get the same label.
	PeerLabel func(peer.ID) string
}

// Collector is a prometheus.Collector of one scheduler's metrics. Create
// one with NewCollector. It is safe for concurrent use, as the Prometheus
// registry requires.
type Collector struct {
	s         *scheduler.Scheduler
	noPeers   bool
	peerLabel func(peer.ID) string

	peers, channelsOpen, channelsClosed, sendersWaiting, sendersParked, inFlight, stopped *prometheus.Desc
	sent, notified, sendErrors, ended, dropped, panics, reusedEarly, responseTimes        *prometheus.Desc

	peerConnected, peerSent, peerNotified, peerSendErrors, peerEnded, peerDropped, peerResponseTimes *prometheus.Desc
	peerOpen, peerInFlight, peerLimit, peerRTT                                                       *prometheus.Desc
}

// NewCollector returns a Collector of s's metrics, named and labelled as
// opts says. Register it with a prometheus.Registerer.
func NewCollector(s *scheduler.Scheduler, opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "peersched"
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, opts.ConstLabels)
	}
	c := &Collector{s: s, noPeers: opts.NoPeers, peerLabel: opts.PeerLabel}
	if c.peerLabel == nil {
		c.peerLabel = defaultPeerLabel
	}

	c.peers = desc("peers", "Connected peers.")
	c.channelsOpen = desc("channels_open", "Channels that may carry a message now, over all peers.")
	c.channelsClosed = desc("channels_closed", "Channels carrying a request or digesting a notification, over all peers.")
	c.sendersWaiting = desc("senders_waiting", "Senders waiting in the queue.")
	c.sendersParked = desc("senders_parked", "Waiting senders that sent nothing through their last offer and are offered nothing until they ask again (Reoffer).")
	c.inFlight = desc("requests_in_flight", "Requests sent and not yet ended, withdrawn ones included.")
	c.stopped = desc("stopped", "1 once the scheduler has stopped, else 0.")
	c.sent = desc("requests_sent_total", "Requests the host accepted.")
	c.notified = desc("notifications_sent_total", "Notifications the host accepted.")
	c.sendErrors = desc("send_errors_total", "Sends the host refused or panicked on.")
	c.ended = desc("requests_ended_total", "Requests ended, by outcome.", "outcome")
	c.dropped = desc("responses_dropped_total", "Responses and refusals dropped, by reason.", "reason")
	c.panics = desc("panics_handled_total", "Panics recovered, and runtime.Goexit calls seen, in callbacks, host sends and peers' Limiters.")
	c.reusedEarly = desc("request_ids_reused_early_total", "Request IDs issued to a peer while still quarantined for it: Config.RequestIDs is too small for the traffic.")
	c.responseTimes = desc("response_time_seconds", "Time from a request's send to its response, for the requests answered.")

	c.peerConnected = desc("peer_connected", "1 for a connected peer, 0 for a departed one whose counters are kept.", "peer")
	c.peerSent = desc("peer_requests_sent_total", "Requests to the peer that the host accepted.", "peer")
	c.peerNotified = desc("peer_notifications_sent_total", "Notifications to the peer that the host accepted.", "peer")
	c.peerSendErrors = desc("peer_send_errors_total", "Sends to the peer that the host refused or panicked on.", "peer")
	c.peerEnded = desc("peer_requests_ended_total", "Requests to the peer ended, by outcome.", "peer", "outcome")
	c.peerDropped = desc("peer_responses_dropped_total", "Responses and refusals from the peer dropped, by reason.", "peer", "reason")
	c.peerResponseTimes = desc("peer_response_time_seconds", "Time from a request's send to the peer's response, for the requests it answered.", "peer")
	c.peerOpen = desc("peer_channels_open", "The peer's channels that may carry a message now.", "peer")
	c.peerInFlight = desc("peer_in_flight", "The peer's messages in flight: its closed channels.", "peer")
	c.peerLimit = desc("peer_limit", "How many messages the peer may have in flight.", "peer")
	c.peerRTT = desc("peer_smoothed_rtt_seconds", "The peer's smoothed response time, which ranks its channels in offers; 0 until one of its requests has been answered or has timed out.", "peer")
	return c
}

// Describe sends the descriptions of every metric c may collect.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.peers, c.channelsOpen, c.channelsClosed, c.sendersWaiting, c.sendersParked, c.inFlight, c.stopped,
		c.sent, c.notified, c.sendErrors, c.ended, c.dropped, c.panics, c.reusedEarly, c.responseTimes,
	} {
		ch <- d
	}
	if c.noPeers {
		return
	}
	for _, d := range []*prometheus.Desc{
		c.peerConnected, c.peerSent, c.peerNotified, c.peerSendErrors, c.peerEnded, c.peerDropped, c.peerResponseTimes,
		c.peerOpen, c.peerInFlight, c.peerLimit, c.peerRTT,
	} {
		ch <- d
	}
}

// Collect reads the scheduler's snapshots and sends them as metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.peers, float64(st.Peers))
	gauge(c.channelsOpen, float64(st.ChannelsOpen))
	gauge(c.channelsClosed, float64(st.ChannelsClosed))
	gauge(c.sendersWaiting, float64(st.SendersWaiting))
	gauge(c.sendersParked, float64(st.SendersParked))
	gauge(c.inFlight, float64(st.RequestsInFlight))
	gauge(c.stopped, boolValue(st.Stopped))
	counter(c.sent, st.Sent)
	counter(c.notified, st.Notified)
	counter(c.sendErrors, st.SendErrors)
	for _, o := range outcomes(&st.Counters) {
		counter(c.ended, o.n, o.name)
	}
	for _, r := range reasons(&st.Counters) {
		counter(c.dropped, r.n, r.name)
	}
	counter(c.panics, st.PanicsHandled)
	counter(c.reusedEarly, st.RequestIDsReusedEarly)
	ch <- prometheus.MustNewConstHistogram(c.responseTimes, st.ResponseTimes.Count, st.ResponseTimes.Sum.Seconds(),
		buckets(&st.ResponseTimes))

	if c.noPeers {
		return
	}
	for _, ps := range c.s.PeerStats(nil) {
		c.collectPeer(ch, &ps)
	}
	for _, u := range c.s.PeerUsage(nil) {
		label := c.peerLabel(u.ID)
		for _, g := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{c.peerOpen, float64(u.ChannelsOpen)},
			{c.peerInFlight, float64(u.ChannelsClosed)},
			{c.peerLimit, float64(u.Limit)},
			{c.peerRTT, u.RTT.Seconds()},
		} {
			ch <- constMetric(g.d, prometheus.GaugeValue, g.v, label)
		}
	}
}

// collectPeer sends one peer's counters and histogram, each with its
// created timestamp.
func (c *Collector) collectPeer(ch chan<- prometheus.Metric, ps *scheduler.PeerStats) {
	label := c.peerLabel(ps.ID)
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		m, err := prometheus.NewConstMetricWithCreatedTimestamp(d, prometheus.CounterValue, float64(v), ps.Since, labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(d, err)
		}
		ch <- m
	}
	ch <- constMetric(c.peerConnected, prometheus.GaugeValue, boolValue(ps.Connected), label)
	counter(c.peerSent, ps.Sent, label)
	counter(c.peerNotified, ps.Notified, label)
	counter(c.peerSendErrors, ps.SendErrors, label)
	for _, o := range outcomes(&ps.Counters) {
		counter(c.peerEnded, o.n, label, o.name)
	}
	for _, r := range reasons(&ps.Counters) {
		counter(c.peerDropped, r.n, label, r.name)
	}
	h := &ps.ResponseTimes
	m, err := prometheus.NewConstHistogramWithCreatedTimestamp(c.peerResponseTimes, h.Count, h.Sum.Seconds(), buckets(h), ps.Since, label)
	if err != nil {
		m = prometheus.NewInvalidMetric(c.peerResponseTimes, err)
	}
	ch <- m
}

// constMetric is prometheus.NewConstMetric, reporting a bad label value
// (which a PeerLabel function may give) as an invalid metric rather than
// panicking.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

type named struct {
	name string
	n    uint64
}

// outcomes names c's counts of how requests ended.
func outcomes(c *scheduler.Counters) [6]named {
	return [6]named{{"answered", c.Succeeded}, {"timeout", c.TimedOut}, {"refused", c.Refused},
		{"disconnected", c.Disconnected}, {"shutdown", c.Shutdown}, {"withdrawn", c.WithdrawnEnded}}
}

// reasons names c's counts of dropped responses.
func reasons(c *scheduler.Counters) [5]named {
	return [5]named{{"late", c.Late}, {"unknown", c.Unknown}, {"wrong_peer", c.WrongPeer}, {"duplicate", c.Duplicate}, {"wrong_type", c.WrongType}}
}

// boundSeconds are the histograms' bucket bounds in seconds.
var boundSeconds = func() (s [scheduler.HistogramBuckets]float64) {
	for i, b := range scheduler.HistogramBounds() {
		s[i] = b.Seconds()
	}
	return s
}()

// buckets returns h's cumulative counts keyed by their bounds in seconds, as
// prometheus.NewConstHistogram takes them.
func buckets(h *scheduler.Histogram) map[float64]uint64 {
	m := make(map[float64]uint64, len(h.Cumulative))
	for i, n := range h.Cumulative {
		m[boundSeconds[i]] = n
	}
	return m
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func defaultPeerLabel(id peer.ID) string {
	if utf8.ValidString(string(id)) {
		return string(id)
	}
	return "0x" + hex.EncodeToString([]byte(id))
}

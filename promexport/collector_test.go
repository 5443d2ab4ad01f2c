package promexport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// host is a host connection that records the request IDs it is asked to
// send.
type host struct {
	id  peer.ID
	mu  sync.Mutex
	ids []peer.RequestID
}

func (h *host) ID() peer.ID { return h.id }

func (h *host) Send(requestID peer.RequestID, _ any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ids = append(h.ids, peer.RequestID(requestID))
	return nil
}

// sendTo is a sender that sends one request to the peer it names.
type sendTo peer.ID

func (to sendTo) OnOffer(o offer.Offer) {
	for i := range o.Len() {
		if c, _ := o.Channel(i); c.Peer == peer.ID(to) {
			o.Request(i, "ping", receiver.Funcs{}, time.Second)
			return
		}
	}
}

func (sendTo) OnDiscard() {}

// bench is a scheduler on a mock clock, with inline callbacks, so that
// every step has finished when its call returns.
type bench struct {
	t     *testing.T
	clock *clock.Mock
	s     *scheduler.Scheduler
	hosts map[peer.ID]*host
}

func newBench(t *testing.T, cfg scheduler.Config) *bench {
	mock := clock.NewMock()
	cfg.Clock, cfg.InlineCallbacks, cfg.RankSeed = mock, true, 1
	s, err := scheduler.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return &bench{t: t, clock: mock, s: s, hosts: map[peer.ID]*host{}}
}

func (b *bench) connect(id peer.ID, channels int) {
	b.t.Helper()
	h := &host{id: id}
	if err := b.s.Connect(h, channels); err != nil {
		b.t.Fatal(err)
	}
	b.hosts[id] = h
}

// request sends a request to the peer named to and returns its ID.
func (b *bench) request(to peer.ID) peer.RequestID {
	b.t.Helper()
	h := b.hosts[to]
	if _, err := b.s.Schedule(sendTo(to), 0); err != nil {
		b.t.Fatal(err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.ids) == 0 {
		b.t.Fatalf("nothing sent to %s", to)
	}
	id := h.ids[len(h.ids)-1]
	h.ids = h.ids[:len(h.ids)-1]
	return id
}

func (b *bench) advance(d time.Duration) {
	synctest.Wait()
	b.clock.Add(d)
	synctest.Wait()
}

// histogramText is the text exposition of a histogram of the given name
// and labels whose every observation fell at or below the bound at index
// first (len(bounds) for none).
func histogramText(name, labels string, first int, count uint64, sum float64) string {
	var out strings.Builder
	for i, b := range scheduler.HistogramBounds() {
		n := uint64(0)
		if i >= first {
			n = count
		}
		fmt.Fprintf(&out, "%s_bucket{%sle=\"%g\"} %d\n", name, labels, b.Seconds(), n)
	}
	fmt.Fprintf(&out, "%s_bucket{%sle=\"+Inf\"} %d\n", name, labels, count)
	labels = strings.TrimSuffix(labels, ",")
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(&out, "%s_sum%s %g\n%s_count%s %d\n", name, labels, sum, name, labels, count)
	return out.String()
}

// TestCollectorExposition drives a scheduler through an answer after 3ms,
// a timeout and a late response, and checks the exposed text of the
// metrics they move.
func TestCollectorExposition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, scheduler.Config{})
		b.connect("alice", 2)
		b.connect("bob", 1)
		id := b.request("alice")
		b.advance(3 * time.Millisecond)
		if err := b.s.Deliver("alice", id, "pong"); err != nil {
			t.Fatal(err)
		}
		late := b.request("bob")
		b.advance(time.Second)
		if err := b.s.Deliver("bob", late, "pong"); err == nil {
			t.Fatal("a late response was accepted")
		}

		c := NewCollector(b.s, Options{})
		const outcomesText = `
# HELP peersched_peer_requests_ended_total Requests to the peer ended, by outcome.
# TYPE peersched_peer_requests_ended_total counter
peersched_peer_requests_ended_total{outcome="answered",peer="alice"} 1
peersched_peer_requests_ended_total{outcome="disconnected",peer="alice"} 0
peersched_peer_requests_ended_total{outcome="refused",peer="alice"} 0
peersched_peer_requests_ended_total{outcome="shutdown",peer="alice"} 0
peersched_peer_requests_ended_total{outcome="timeout",peer="alice"} 0
peersched_peer_requests_ended_total{outcome="withdrawn",peer="alice"} 0
peersched_peer_requests_ended_total{outcome="answered",peer="bob"} 0
peersched_peer_requests_ended_total{outcome="disconnected",peer="bob"} 0
peersched_peer_requests_ended_total{outcome="refused",peer="bob"} 0
peersched_peer_requests_ended_total{outcome="shutdown",peer="bob"} 0
peersched_peer_requests_ended_total{outcome="timeout",peer="bob"} 1
peersched_peer_requests_ended_total{outcome="withdrawn",peer="bob"} 0
# HELP peersched_requests_sent_total Requests the host accepted.
# TYPE peersched_requests_sent_total counter
peersched_requests_sent_total 2
# HELP peersched_responses_dropped_total Responses and refusals dropped, by reason.
# TYPE peersched_responses_dropped_total counter
peersched_responses_dropped_total{reason="duplicate"} 0
peersched_responses_dropped_total{reason="late"} 1
peersched_responses_dropped_total{reason="unknown"} 0
peersched_responses_dropped_total{reason="wrong_peer"} 0
peersched_responses_dropped_total{reason="wrong_type"} 0
# HELP peersched_peer_in_flight The peer's messages in flight: its closed channels.
# TYPE peersched_peer_in_flight gauge
peersched_peer_in_flight{peer="alice"} 0
peersched_peer_in_flight{peer="bob"} 0
# HELP peersched_peer_limit How many messages the peer may have in flight.
# TYPE peersched_peer_limit gauge
peersched_peer_limit{peer="alice"} 2
peersched_peer_limit{peer="bob"} 1
# HELP peersched_peers Connected peers.
# TYPE peersched_peers gauge
peersched_peers 2
`
		if err := testutil.CollectAndCompare(c, strings.NewReader(outcomesText),
			"peersched_peer_requests_ended_total", "peersched_requests_sent_total", "peersched_responses_dropped_total",
			"peersched_peer_in_flight", "peersched_peer_limit", "peersched_peers"); err != nil {
			t.Fatal(err)
		}

		// 3ms is in the bucket bounded by 4ms (index 6).
		histograms := "# HELP peersched_peer_response_time_seconds Time from a request's send to the peer's response, for the requests it answered.\n" +
			"# TYPE peersched_peer_response_time_seconds histogram\n" +
			histogramText("peersched_peer_response_time_seconds", `peer="alice",`, 6, 1, 0.003) +
			histogramText("peersched_peer_response_time_seconds", `peer="bob",`, scheduler.HistogramBuckets, 0, 0) +
			"# HELP peersched_response_time_seconds Time from a request's send to its response, for the requests answered.\n" +
			"# TYPE peersched_response_time_seconds histogram\n" +
			histogramText("peersched_response_time_seconds", "", 6, 1, 0.003)
		if err := testutil.CollectAndCompare(c, strings.NewReader(histograms),
			"peersched_peer_response_time_seconds", "peersched_response_time_seconds"); err != nil {
			t.Fatal(err)
		}

		// Every metric passes the client's lint (names, units, help).
		problems, err := testutil.CollectAndLint(c)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
		// A pedantic registry checks Collect against Describe.
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCollectorRequestIDsReusedEarly: with a range of two IDs, an ID
// issued again to the peer its timed-out request went to, while still
// quarantined for it, is counted.
func TestCollectorRequestIDsReusedEarly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, scheduler.Config{RequestIDs: receiver.IDRange{Lo: 1, Hi: 3}})
		b.connect("alice", 1)
		c := NewCollector(b.s, Options{NoPeers: true})
		const name = "peersched_request_ids_reused_early_total"
		want := func(n int) string {
			return fmt.Sprintf("# HELP %s Request IDs issued to a peer while still quarantined for it: Config.RequestIDs is too small for the traffic.\n# TYPE %s counter\n%s %d\n", name, name, name, n)
		}
		x := b.request("alice")
		b.advance(time.Second) // x times out, and is quarantined for alice
		y := b.request("alice")
		if err := b.s.Deliver("alice", y, "pong"); err != nil {
			t.Fatal(err)
		}
		if err := testutil.CollectAndCompare(c, strings.NewReader(want(0)), name); err != nil {
			t.Fatal(err)
		}
		if again := b.request("alice"); again != x {
			t.Fatalf("issued %d, want %d again, early", again, x)
		}
		if err := testutil.CollectAndCompare(c, strings.NewReader(want(1)), name); err != nil {
			t.Fatal(err)
		}
	})
}

// TestCollectorPeerComesBack: a peer that leaves stays exported, not
// connected, with its counters; when it comes back they go on, never
// down, with the same created timestamp. Once forgotten and back, its
// counters start again with a later created timestamp.
func TestCollectorPeerComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, scheduler.Config{KeepDepartedPeers: 1})
		c := NewCollector(b.s, Options{})
		b.connect("alice", 1)
		first := b.clock.Now()
		b.request("alice")
		sent := func() (float64, time.Time) {
			t.Helper()
			m := gatherOne(t, c, "peersched_peer_requests_sent_total", "alice")
			return m.GetCounter().GetValue(), m.GetCounter().GetCreatedTimestamp().AsTime()
		}
		connected := func() float64 {
			t.Helper()
			return gatherOne(t, c, "peersched_peer_connected", "alice").GetGauge().GetValue()
		}

		if err := b.s.Disconnect("alice"); err != nil {
			t.Fatal(err)
		}
		if v, _ := sent(); v != 1 || connected() != 0 {
			t.Fatalf("departed: sent %v, connected %v; want 1, 0", v, connected())
		}
		b.advance(time.Minute)
		b.connect("alice", 1)
		b.request("alice")
		if v, ct := sent(); v != 2 || !ct.Equal(first) || connected() != 1 {
			t.Fatalf("back: sent %v created %v, connected %v; want 2, %v, 1", v, ct, connected(), first)
		}

		// Gone, and another peer gone after it: forgotten.
		b.connect("bob", 1)
		for _, id := range []peer.ID{"alice", "bob"} {
			if err := b.s.Disconnect(id); err != nil {
				t.Fatal(err)
			}
		}
		if n := testutil.CollectAndCount(c, "peersched_peer_requests_sent_total"); n != 1 {
			t.Fatalf("%d peers' series; want bob's alone", n)
		}
		b.advance(time.Minute)
		b.connect("alice", 1)
		if v, ct := sent(); v != 0 || !ct.After(first) {
			t.Fatalf("forgotten and back: sent %v created %v; want 0, after %v", v, ct, first)
		}
		if got := testutil.ToFloat64(collectorOf(c, "peersched_requests_sent_total")); got != 2 {
			t.Fatalf("the total fell to %v", got)
		}
	})
}

// TestCollectorOptions: NoPeers leaves out every per-peer series; const
// labels and the namespace apply to all; an ID that is not UTF-8 is
// labelled in hexadecimal.
func TestCollectorOptions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, scheduler.Config{})
		b.connect("\xff\x01", 1)

		c := NewCollector(b.s, Options{NoPeers: true, Namespace: "node", ConstLabels: prometheus.Labels{"lane": "fetch"}})
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(c)
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if !strings.HasPrefix(f.GetName(), "node_") || strings.HasPrefix(f.GetName(), "node_peer_") {
				t.Errorf("family %s", f.GetName())
			}
			for _, m := range f.GetMetric() {
				if l := m.GetLabel(); len(l) == 0 || l[0].GetName() != "lane" || l[0].GetValue() != "fetch" {
					t.Errorf("%s: labels %v", f.GetName(), l)
				}
			}
		}

		all := NewCollector(b.s, Options{})
		if err := testutil.CollectAndCompare(all, strings.NewReader(`
# HELP peersched_peer_limit How many messages the peer may have in flight.
# TYPE peersched_peer_limit gauge
peersched_peer_limit{peer="0xff01"} 1
`), "peersched_peer_limit"); err != nil {
			t.Fatal(err)
		}
	})
}

// collectorOf is c restricted to the family named name, for testutil's
// single-metric helpers.
func collectorOf(c prometheus.Collector, name string) prometheus.Collector {
	return filtered{c, name}
}

type filtered struct {
	prometheus.Collector
	name string
}

func (f filtered) Collect(ch chan<- prometheus.Metric) {
	all := make(chan prometheus.Metric)
	go func() {
		f.Collector.Collect(all)
		close(all)
	}()
	for m := range all {
		if strings.Contains(m.Desc().String(), `fqName: "`+f.name+`"`) {
			ch <- m
		}
	}
}

// gatherOne returns the metric of the family name whose peer label is id.
func gatherOne(t *testing.T, c prometheus.Collector, name string, id peer.ID) *dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "peer" && l.GetValue() == string(id) {
					return m
				}
			}
		}
	}
	t.Fatalf("no %s{peer=%q}", name, id)
	return nil
}

// declines is a sender with nothing to send.
type declines struct{}

func (declines) OnOffer(offer.Offer) {}
func (declines) OnDiscard()          {}

// TestCollectorSendersParked: a sender that declined is parked, and the
// gauge says so, beside the senders waiting.
func TestCollectorSendersParked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBench(t, scheduler.Config{})
		b.connect("alice", 1)
		if _, err := b.s.Schedule(declines{}, 0); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		const want = `
# HELP peersched_senders_parked Waiting senders that sent nothing through their last offer and are offered nothing until they ask again (Reoffer).
# TYPE peersched_senders_parked gauge
peersched_senders_parked 1
# HELP peersched_senders_waiting Senders waiting in the queue.
# TYPE peersched_senders_waiting gauge
peersched_senders_waiting 1
`
		c := NewCollector(b.s, Options{})
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "peersched_senders_parked", "peersched_senders_waiting"); err != nil {
			t.Fatal(err)
		}
	})
}

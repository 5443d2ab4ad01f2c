package promexport_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/promexport"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// link stands in for the host's connection to a peer: it remembers the ID
// of the last request sent.
type link struct {
	id   peer.ID
	last receiver.RequestID
}

func (l *link) ID() peer.ID { return l.id }

func (l *link) Send(requestID uint64, _ any) error {
	l.last = receiver.RequestID(requestID)
	return nil
}

// once sends one request on the first channel it is offered.
type once struct{}

func (once) OnOffer(o offer.Offer) { o.Request(0, "ping", receiver.Funcs{}, time.Second) }
func (once) OnDiscard()            {}

// Register a Collector with a registry and serve the registry over HTTP.
// Here a mock clock lets the peer answer exactly 3ms after the request,
// and the example reads a few lines of what a scrape would get.
func ExampleNewCollector() {
	mock := clock.NewMock()
	s, err := scheduler.New(scheduler.Config{Clock: mock, InlineCallbacks: true})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(promexport.NewCollector(s, promexport.Options{}))
	handler := promhttp.HandlerFor(reg, promhttp.HandlerOpts{}) // serve it on /metrics

	alice := &link{id: "alice"}
	if err := s.Connect(alice, 1); err != nil {
		panic(err)
	}
	if _, err := s.Schedule(once{}, 0); err != nil {
		panic(err)
	}
	mock.Add(3 * time.Millisecond)
	if err := s.Deliver("alice", alice.last, "pong"); err != nil {
		panic(err)
	}

	scrape := httptest.NewRecorder()
	handler.ServeHTTP(scrape, httptest.NewRequest("GET", "/metrics", nil))
	lines := bufio.NewScanner(scrape.Body)
	for lines.Scan() {
		line := lines.Text()
		if strings.HasPrefix(line, "peersched_peer_requests_sent_total") ||
			strings.HasPrefix(line, `peersched_peer_requests_ended_total{outcome="answered"`) ||
			strings.HasPrefix(line, "peersched_peer_response_time_seconds_bucket") && strings.Contains(line, `le="0.004"`) ||
			strings.HasPrefix(line, "peersched_peer_response_time_seconds_sum") {
			fmt.Println(line)
		}
	}
	// Output:
	// peersched_peer_requests_ended_total{outcome="answered",peer="alice"} 1
	// peersched_peer_requests_sent_total{peer="alice"} 1
	// peersched_peer_response_time_seconds_bucket{peer="alice",le="0.004"} 1
	// peersched_peer_response_time_seconds_sum{peer="alice"} 0.003
}

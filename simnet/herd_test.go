package simnet_test

// The herding experiment (issue 12): many nodes, each with its own
// scheduler, share the same serving peers, all of equal speed, and all
// start at once with the same view of them. If every scheduler ranked equal
// channels the same way, every node would send its first requests to the
// same peer. This file measures how evenly the requests spread.
//
// A simnet Network answers one host. To let 50 nodes share its 8 peers,
// herdMux gives each node its own connection to each peer (herdConn) and
// renames request IDs on the shared network, so that each answer goes back
// to the node that asked, under the node's own ID.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/simnet"
)

// herdSetup is one herding run.
type herdSetup struct {
	nodes, servers int
	channels       int // each node's fixed channels to each server
	demand         int // requests each node keeps in flight
	requests       int // requests each node sends in all
	seed           uint64
	// configure, if set, adjusts node i's scheduler Config.
	configure func(i int, cfg *scheduler.Config)
}

// herdServer is the profile of every serving peer: equal speed, a finite
// capacity (so that a herd makes a queue), a little jitter.
var herdServer = simnet.Profile{
	Latency: simnet.Uniform(8*time.Millisecond, 12*time.Millisecond),
	Service: simnet.Service{Workers: 4, PerRequest: 2 * time.Millisecond},
}

// herdResult is where the requests went.
type herdResult struct {
	served []int // requests each server received, in server order
	first  []int // of them, the nodes' first requests
	// firstWave counts, per server, the requests that the nodes sent
	// before any answer came back: demand per node.
	firstWave []int
	virtual   time.Duration
}

// spread returns how far the least and the most loaded entry of counts
// fall from the mean, in percent of it.
func spread(counts []int) (low, high float64) {
	sum := 0
	for _, c := range counts {
		sum += c
	}
	mean := float64(sum) / float64(len(counts))
	lo, hi := slices.Min(counts), slices.Max(counts)
	return 100 * (float64(lo) - mean) / mean, 100 * (float64(hi) - mean) / mean
}

func runHerd(t *testing.T, h herdSetup) herdResult {
	t.Helper()
	var out herdResult
	synctest.Test(t, func(t *testing.T) { out = runHerdInBubble(t, h) })
	return out
}

func runHerdInBubble(t *testing.T, h herdSetup) herdResult {
	clk := clock.NewMock()
	start := clk.Now()
	l, err := ledger.Generate(h.seed, 200)
	if err != nil {
		t.Fatal(err)
	}
	var hashes []ledger.Hash
	for hash := range l.Hashes() {
		hashes = append(hashes, hash)
	}
	mux := &herdMux{routes: map[uint64]herdRoute{}}
	net, err := simnet.New(simnet.Config{Ledger: l, Clock: clk, Seed: h.seed, Deliver: mux.deliver})
	if err != nil {
		t.Fatal(err)
	}
	defer net.Close()
	servers := make([]*simnet.Peer, h.servers)
	index := map[peer.ID]int{}
	for i := range servers {
		id := peer.ID(fmt.Sprintf("s%d", i))
		if servers[i], err = net.AddPeer(id, herdServer); err != nil {
			t.Fatal(err)
		}
		index[id] = i
	}
	out := herdResult{first: make([]int, h.servers), firstWave: make([]int, h.servers)}
	nodes := make([]*herdNode, h.nodes)
	for i := range nodes {
		cfg := scheduler.Config{Clock: clk, InlineCallbacks: true}
		if h.configure != nil {
			h.configure(i, &cfg)
		}
		s, err := scheduler.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		n := &herdNode{t: t, sched: s, mux: mux, left: h.requests, demand: h.demand, hashes: hashes, start: i}
		nodes[i] = n
		for _, srv := range servers {
			if err := s.Connect(herdConn{node: n, server: srv}, h.channels); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Every node starts at the same instant, with the same view.
	for _, n := range nodes {
		n.want()
	}
	for _, n := range nodes {
		for _, id := range n.sentTo {
			out.firstWave[index[id]]++
		}
		out.first[index[n.sentTo[0]]]++
	}
	for busy := true; busy; {
		if clk.Now().Sub(start) > time.Minute {
			t.Fatal("the nodes did not finish within a virtual minute")
		}
		synctest.Wait()
		clk.Add(time.Millisecond)
		synctest.Wait()
		busy = false
		for _, n := range nodes {
			busy = busy || n.done < h.requests
		}
	}
	out.virtual = clk.Now().Sub(start)
	for _, srv := range servers {
		out.served = append(out.served, srv.Stats().Requests)
	}
	for _, n := range nodes {
		if n.failures > 0 {
			t.Errorf("a node saw %d failed requests", n.failures)
		}
		if err := n.sched.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// herdMux shares the servers among the nodes: a request goes out under a
// network-wide ID, and its answer is routed back to the node that sent it.
type herdMux struct {
	mu     sync.Mutex
	next   uint64
	routes map[uint64]herdRoute // guarded by mu
}

type herdRoute struct {
	node *herdNode
	id   receiver.RequestID
}

func (m *herdMux) send(c herdConn, id uint64, msg any) error {
	m.mu.Lock()
	m.next++
	wireID := m.next
	m.routes[wireID] = herdRoute{c.node, receiver.RequestID(id)}
	m.mu.Unlock()
	return c.server.Send(wireID, msg)
}

func (m *herdMux) deliver(from peer.ID, wireID receiver.RequestID, resp any) {
	m.mu.Lock()
	r, ok := m.routes[uint64(wireID)]
	delete(m.routes, uint64(wireID))
	m.mu.Unlock()
	if ok {
		_ = r.node.sched.Deliver(from, r.id, resp)
	}
}

// herdConn is one node's connection to one shared server.
type herdConn struct {
	node   *herdNode
	server *simnet.Peer
}

func (c herdConn) ID() peer.ID                       { return c.server.ID() }
func (c herdConn) Send(id uint64, message any) error { return c.node.mux.send(c, id, message) }

// herdNode keeps demand requests in flight until it has sent requests of
// them. It is its own sender and receiver; with inline callbacks and the
// mock clock, only one goroutine at a time runs it.
type herdNode struct {
	t      *testing.T
	sched  *scheduler.Scheduler
	mux    *herdMux
	hashes []ledger.Hash
	start  int // where in hashes its requests begin

	demand, left, inFlight, done, failures int
	queued                                 bool
	sentTo                                 []peer.ID // the servers of its requests, in order
}

// want schedules the node's sender if it has room and work.
func (n *herdNode) want() {
	if n.queued || n.left == 0 || n.inFlight >= n.demand {
		return
	}
	n.queued = true
	if _, err := n.sched.Schedule(n, 0); err != nil {
		n.t.Error(err)
	}
}

func (n *herdNode) OnOffer(o offer.Offer) {
	n.queued = false
	for i := 0; i < o.Len() && o.Remaining() > 0 && n.left > 0 && n.inFlight < n.demand; i++ {
		k := (n.start + len(n.sentTo)) % len(n.hashes)
		msg := ledger.GetObjects{Hashes: []ledger.Hash{n.hashes[k]}}
		if _, err := o.Request(i, msg, n, 5*time.Second); err != nil {
			n.t.Error(err)
			continue
		}
		ch, _ := o.Channel(i)
		n.sentTo = append(n.sentTo, ch.Peer)
		n.left--
		n.inFlight++
	}
	n.want()
}

func (n *herdNode) OnDiscard() {}

func (n *herdNode) OnResponse(receiver.RequestID, peer.ID, any) {
	n.inFlight--
	n.done++
	n.want()
}

func (n *herdNode) OnFailure(receiver.RequestID, peer.ID, receiver.Reason) {
	n.inFlight--
	n.done++
	n.failures++
	n.want()
}

// herdTable formats the results of runs at several demands as a Markdown
// table.
func herdTable(demands []int, results []herdResult) string {
	var b strings.Builder
	b.WriteString("| demand per node | first requests per server | spread | all requests per server | spread | virtual time |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for i, r := range results {
		flo, fhi := spread(r.firstWave)
		lo, hi := spread(r.served)
		fmt.Fprintf(&b, "| %d | %v | %+.0f%% / %+.0f%% | %v | %+.0f%% / %+.0f%% | %v |\n", demands[i], r.firstWave, flo, fhi, r.served, lo, hi, r.virtual)
	}
	return b.String()
}

// TestHerdingSpread runs the experiment and prints its table (go test
// ./simnet -run HerdingSpread -v).
func TestHerdingSpread(t *testing.T) {
	demands := []int{1, 2, 4, 32}
	var results []herdResult
	for _, d := range demands {
		r := runHerd(t, herdSetup{nodes: 50, servers: 8, channels: 4, demand: d, requests: 64, seed: 1})
		results = append(results, r)
	}
	t.Logf("\n%s", herdTable(demands, results))
}

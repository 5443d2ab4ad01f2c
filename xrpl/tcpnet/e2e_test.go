package tcpnet_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

var e2eLedger = func() *ledger.Ledger {
	l, err := ledger.Generate(9, 5000)
	if err != nil {
		panic(err)
	}
	return l
}()

// servers starts a server on loopback for each behaviour and returns them;
// they close when the test ends.
func servers(t *testing.T, behaviours ...tcpnet.Behaviour) []*tcpnet.Server {
	t.Helper()
	var out []*tcpnet.Server
	for i, b := range behaviours {
		s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: e2eLedger, Behaviour: b, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		out = append(out, s)
	}
	return out
}

func latency(lo, hi time.Duration) tcpnet.Behaviour {
	return tcpnet.Behaviour{Latency: simnet.Uniform(lo, hi)}
}

// fetchOverTCP fetches e2eLedger from srvs through host (a scheduler or a
// peerset) with run, calling during with each progress report.
func fetchOverTCP(t *testing.T, host tcpnet.Host, srvs []*tcpnet.Server, run func(context.Context) (fetch.Report, error)) (fetch.Report, *tcpnet.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := tcpnet.NewClient(host, tcpnet.ClientConfig{Channels: 2, RedialMin: 5 * time.Millisecond, RedialMax: 50 * time.Millisecond})
	for i, s := range srvs {
		client.Add(peer.ID(fmt.Sprintf("s%d", i)), s.Addr())
	}
	rep, err := run(ctx)
	client.Close()
	if err != nil {
		t.Fatalf("fetch over TCP: %v\nreport %+v", err, rep)
	}
	if !rep.Complete || rep.Objects != e2eLedger.Len() || rep.Bytes != e2eLedger.Size() {
		t.Fatalf("report %+v", rep)
	}
	return rep, client
}

func config(progress func(fetch.Progress)) fetch.Config {
	return fetch.Config{
		Root: e2eLedger.Root(), Expected: e2eLedger.Len(), Batch: 16,
		Timeout: time.Second, StallTimeout: 20 * time.Second,
		ProgressEvery: 10 * time.Millisecond, Progress: progress,
	}
}

// killer kills a server (once) when a third of the ledger has arrived.
type killer struct {
	mu     sync.Mutex
	target func() *tcpnet.Server // which one, decided when the time comes
	killed *tcpnet.Server
}

func (k *killer) progress(p fetch.Progress) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.killed == nil && p.Verified > e2eLedger.Len()/3 {
		if s := k.target(); s != nil {
			s.Kill()
			k.killed = s
		}
	}
}

func (k *killer) done() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killed != nil
}

// TestFetchOverTCP: the whole ledger over real loopback TCP through the
// scheduler, while one peer is killed for good a third of the way in and
// another drops its connection midway and comes back.
func TestFetchOverTCP(t *testing.T) {
	dropper := tcpnet.Behaviour{Latency: simnet.Fixed(3 * time.Millisecond), DropAfter: 40, DownFor: 20 * time.Millisecond}
	srvs := servers(t, latency(1*time.Millisecond, 4*time.Millisecond), dropper,
		latency(2*time.Millisecond, 6*time.Millisecond), latency(3*time.Millisecond, 8*time.Millisecond))
	sched, err := scheduler.New(scheduler.Config{RequestIDs: tcpnet.RequestIDs()})
	if err != nil {
		t.Fatal(err)
	}
	defer sched.Shutdown(context.Background())
	k := &killer{target: func() *tcpnet.Server { return srvs[0] }}
	rep, client := fetchOverTCP(t, sched, srvs, func(ctx context.Context) (fetch.Report, error) {
		return fetch.Run(ctx, sched, config(k.progress))
	})
	if !k.done() {
		t.Fatal("the fetch ended before the kill")
	}
	if st := srvs[1].Stats(); st.Drops == 0 {
		t.Errorf("the dropping peer never dropped: %+v", st)
	}
	if client.Dials() < len(srvs)+1 {
		t.Errorf("%d dials: the dropped peer did not come back", client.Dials())
	}
	t.Logf("%d objects in %v, %d requests, %d disconnects, %d timeouts, %d dials",
		rep.Objects, rep.Wall, rep.Requests, rep.Disconnects, rep.Timeouts, client.Dials())
}

// firstHost is a Host that remembers which peer connected first.
type firstHost struct {
	tcpnet.Host
	mu    sync.Mutex
	first peer.ID
}

func (h *firstHost) Connect(p peer.Peer, channels int) error {
	h.mu.Lock()
	if h.first == "" {
		h.first = p.ID()
	}
	h.mu.Unlock()
	return h.Host.Connect(p, channels)
}

// TestPeersetOverTCP: the peerset strategy completes over TCP too, when the
// first peer of its set is killed a third of the way in: its requests time
// out, and the set widens.
func TestPeersetOverTCP(t *testing.T) {
	srvs := servers(t, latency(1*time.Millisecond, 4*time.Millisecond), latency(2*time.Millisecond, 6*time.Millisecond),
		latency(2*time.Millisecond, 6*time.Millisecond), latency(3*time.Millisecond, 8*time.Millisecond))
	k := &killer{}
	cfg := config(k.progress)
	cfg.Timeout = 300 * time.Millisecond
	ps, err := fetch.NewPeerset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	host := &firstHost{Host: ps}
	k.target = func() *tcpnet.Server {
		host.mu.Lock()
		defer host.mu.Unlock()
		var i int
		if _, err := fmt.Sscanf(string(host.first), "s%d", &i); err != nil {
			return nil
		}
		return srvs[i]
	}
	rep, _ := fetchOverTCP(t, host, srvs, ps.Run)
	if !k.done() {
		t.Fatal("the fetch ended before the kill")
	}
	if rep.Timeouts == 0 || len(rep.Peers) <= fetch.DefaultSetSize {
		t.Errorf("%d timeouts, %d peers used: the set did not widen after the kill", rep.Timeouts, len(rep.Peers))
	}
	t.Logf("%d objects in %v, %d requests, %d timeouts, %d peers used", rep.Objects, rep.Wall, rep.Requests, rep.Timeouts, len(rep.Peers))
}

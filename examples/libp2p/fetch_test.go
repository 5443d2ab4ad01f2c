package libp2pnet

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// One libp2p host fetches a generated ledger from five others through the
// scheduler; half way through, one of them (holding a query unanswered) is
// closed. libp2p tells the fetching host, the scheduler fails that peer's
// requests as disconnected, the fetch asks the other four, and every node
// arrives once and matches the ledger.
func TestFetchOverLibp2pSurvivesAPeerClosedHalfWay(t *testing.T) {
	l, err := ledger.Generate(7, 2000)
	require.NoError(t, err)

	fetcher := newHost(t)
	s, err := scheduler.New(scheduler.Config{RequestIDs: RequestIDs()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, s.Shutdown(ctx))
	})
	client := NewClient(fetcher, s, ClientConfig{})
	t.Cleanup(func() { _ = client.Close() })

	victim := newStallingAnswerer(l)
	var servers []host.Host
	var victimConn *Conn
	for i := range 5 {
		h := newHost(t)
		var src Answerer = l
		if i == 0 {
			src = victim
		}
		srv := Serve(h, src, ServerConfig{})
		t.Cleanup(func() { _ = srv.Close() })
		dial(t, fetcher, h)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := client.Add(ctx, h.ID())
		cancel()
		require.NoError(t, err)
		if i == 0 {
			victimConn = conn
		}
		servers = append(servers, h)
	}
	require.Len(t, s.PeerUsage(nil), 5)

	// Every node that verifies is checked once more against the ledger, and
	// counted; half way, the victim starts holding its queries.
	var mu sync.Mutex
	got := make(map[ledger.Hash]int)
	received := func(h ledger.Hash, data []byte) {
		mu.Lock()
		defer mu.Unlock()
		want, ok := l.Get(h)
		if !ok || !bytes.Equal(want, data) {
			t.Errorf("node %v does not match the ledger", h)
		}
		got[h]++
		if len(got) == l.Len()/2 {
			close(victim.stall)
		}
	}

	// Once the victim holds a query, close its host; then let its
	// handler go.
	closed := make(chan struct{})
	testEnded := make(chan struct{})
	t.Cleanup(func() { close(testEnded) })
	go func() {
		defer close(closed)
		select {
		case <-victim.stalled:
		case <-testEnded:
		}
		_ = servers[0].Close()
		close(victim.release)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rep, err := fetch.Run(ctx, s, fetch.Config{Root: l.Root(), Expected: l.Len(), Batch: 16, Received: received})
	require.NoError(t, err)
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the victim never held a query: it got none after half way")
	}

	require.True(t, rep.Complete)
	require.Equal(t, l.Len(), rep.Objects)
	require.Equal(t, l.Size(), rep.Bytes)
	mu.Lock()
	require.Len(t, got, l.Len(), "every node arrived")
	for h, n := range got {
		require.Equal(t, 1, n, "node %v arrived once", h)
	}
	mu.Unlock()

	// The victim's requests in flight failed as disconnected, its Conn
	// ended, and the scheduler forgot it; the other four are still there.
	require.GreaterOrEqual(t, rep.Disconnects, 1, "the held query failed as disconnected")
	waitEnded(t, victimConn)
	require.Error(t, victimConn.Err())
	usage := s.PeerUsage(nil)
	require.Len(t, usage, 4)
	for _, u := range usage {
		require.NotEqual(t, peer.ID(servers[0].ID().String()), u.ID)
	}
	t.Logf("%d nodes in %v, %d requests, %d failed as disconnected; the victim's Conn ended with: %v",
		rep.Objects, rep.Wall, rep.Requests, rep.Disconnects, victimConn.Err())
}

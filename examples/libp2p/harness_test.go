package libp2pnet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p"
	"github.com/libp2p/go-libp2p/core/host"
	p2ppeer "github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/p2p/transport/tcp"
	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// newHost starts a libp2p host on loopback with the TCP transport alone
// (no QUIC, WebRTC, relay, NAT or metrics), closed when the test ends.
func newHost(t *testing.T) host.Host {
	t.Helper()
	h, err := libp2p.New(
		libp2p.Transport(tcp.NewTCPTransport),
		libp2p.ListenAddrStrings("/ip4/127.0.0.1/tcp/0"),
		libp2p.DisableRelay(),
		libp2p.DisableMetrics(),
		libp2p.Ping(false),
	)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// dial connects from to the host to, so that a stream can be opened.
func dial(t *testing.T, from, to host.Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, from.Connect(ctx, p2ppeer.AddrInfo{ID: to.ID(), Addrs: to.Addrs()}))
}

// recordingHost is a Host that records what it is told.
type recordingHost struct {
	mu           sync.Mutex
	connected    []peer.ID
	disconnected []peer.ID
	delivered    []any
	disconnect   chan peer.ID // each Disconnect, as well
}

func newRecordingHost() *recordingHost {
	return &recordingHost{disconnect: make(chan peer.ID, 16)}
}

func (r *recordingHost) Connect(p peer.Peer, _ int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connected = append(r.connected, p.ID())
	return nil
}

func (r *recordingHost) Disconnect(id peer.ID) error {
	r.mu.Lock()
	r.disconnected = append(r.disconnected, id)
	r.mu.Unlock()
	r.disconnect <- id
	return nil
}

func (r *recordingHost) Deliver(_ peer.ID, _ peer.RequestID, response any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delivered = append(r.delivered, response)
	return nil
}

func (r *recordingHost) disconnects() []peer.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]peer.ID(nil), r.disconnected...)
}

// stallingAnswerer answers from its ledger until stall is closed; from
// then on each Answer says so on stalled (the first time) and waits for
// release. It is a serving peer that, half way through a fetch, holds the
// query it was just given, so that closing it then is sure to fail a
// request in flight.
type stallingAnswerer struct {
	l           *ledger.Ledger
	stall       chan struct{}
	stalled     chan struct{}
	release     chan struct{}
	stalledOnce sync.Once
}

func newStallingAnswerer(l *ledger.Ledger) *stallingAnswerer {
	return &stallingAnswerer{l: l, stall: make(chan struct{}), stalled: make(chan struct{}), release: make(chan struct{})}
}

func (a *stallingAnswerer) Answer(req ledger.GetObjects) ledger.Objects {
	select {
	case <-a.stall:
		a.stalledOnce.Do(func() { close(a.stalled) })
		<-a.release
	default:
	}
	return a.l.Answer(req)
}

// errRefused is refusingHost's answer to Connect.
var errRefused = errors.New("refused")

// refusingHost refuses every peer.
type refusingHost struct{ *recordingHost }

func (refusingHost) Connect(peer.Peer, int) error { return errRefused }

// waitEnded waits for conn to end, failing the test if it has not within
// ten seconds (a bound on a hang, not a measure: it ends in milliseconds).
func waitEnded(t *testing.T, conn *Conn) {
	t.Helper()
	select {
	case <-conn.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("the Conn to %q has not ended", conn.ID())
	}
}

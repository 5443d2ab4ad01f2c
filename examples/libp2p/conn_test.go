package libp2pnet

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// pair starts a fetching host with a Client that reports to a
// recordingHost, and a serving host whose handler of Protocol holds each
// stream, neither reading nor writing, until the test ends; it adds the
// serving host to the Client and waits until the handler has the stream.
func pair(t *testing.T, cfg ClientConfig) (*Client, *recordingHost, host.Host, *Conn) {
	t.Helper()
	fetcher, server := newHost(t), newHost(t)
	started := make(chan struct{}, 1)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // before the hosts close
	server.SetStreamHandler(Protocol, func(s network.Stream) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		_ = s.Reset()
	})
	dial(t, fetcher, server)
	rec := newRecordingHost()
	client := NewClient(fetcher, rec, cfg)
	t.Cleanup(func() { _ = client.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := client.Add(ctx, server.ID())
	require.NoError(t, err)
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("the server never got the stream")
	}
	return client, rec, server, conn
}

// A serving peer that never reads: the writer is stuck on the stream's
// flow control, yet every Send returns at once, the queue's overflow is
// refused with ErrQueueFull, and Close still ends the Conn (the stuck write
// is unblocked) and tells the Host once.
func TestSendNeverWaitsForTheNetwork(t *testing.T) {
	_, rec, _, conn := pair(t, ClientConfig{Conn: ConnConfig{QueueLen: 2}})

	big := ledger.GetObjects{Hashes: make([]ledger.Hash, wire.DefaultMaxItems)} // 128 KiB a frame
	var err error
	sent := 0
	for ; sent < 10_000 && err == nil; sent++ {
		err = conn.Send(peer.RequestID(sent+1), big)
	}
	require.ErrorIs(t, err, ErrQueueFull, "after %d sends", sent)
	t.Logf("the queue was full after %d sends of %d bytes", sent, wire.MessageSize(1, big))

	require.NoError(t, conn.Close())
	require.ErrorIs(t, conn.Err(), ErrClosed)
	require.ErrorIs(t, conn.Send(1, big), ErrClosed)
	require.Equal(t, []peer.ID{conn.ID()}, rec.disconnects())
}

// otherConn is a second connection to the same peer: libp2p's
// notification of its close says nothing about a stream on another one.
type otherConn struct{ network.Conn }

// libp2p's Disconnected notification ends the Conn whose stream ran on the
// closed connection, and the Host hears Disconnect once; the close of
// another connection to the same peer does not. (go-libp2p resets a
// closing connection's streams before it notifies, so in a real close the
// reader usually sees the reset first: here the notification is delivered
// alone, on a stream that stays up, as the Client's Notifiee receives it.)
func TestConnectionClosedNotificationEndsTheConn(t *testing.T) {
	client, rec, _, conn := pair(t, ClientConfig{})
	underlying := conn.stream.Conn()
	net := client.h.Network()

	// The notification marks the Conn as ending before it returns, so
	// what it did is visible at once.
	client.notifiee.Disconnected(net, otherConn{underlying})
	require.NoError(t, conn.Err(), "another connection's close")

	client.notifiee.Disconnected(net, underlying)
	waitEnded(t, conn)
	require.ErrorIs(t, conn.Err(), ErrConnectionLost)
	require.ErrorIs(t, conn.Send(1, ledger.GetObjects{}), ErrClosed)
	require.Equal(t, []peer.ID{conn.ID()}, rec.disconnects())
}

// Add refuses a peer already added, a peer that does not speak Protocol,
// and anything after Close; a Host that refuses the peer leaves nothing
// behind (no Disconnect, the stream reset).
func TestAddErrors(t *testing.T) {
	client, rec, server, conn := pair(t, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	_, err := client.Add(ctx, server.ID())
	require.ErrorIs(t, err, ErrAlreadyAdded)

	mute := newHost(t) // no handler for Protocol
	dial(t, client.h, mute)
	_, err = client.Add(ctx, mute.ID())
	require.Error(t, err)

	l, err := ledger.Generate(1, 10)
	require.NoError(t, err)
	serving := newHost(t)
	srv := Serve(serving, l, ServerConfig{})
	t.Cleanup(func() { _ = srv.Close() })
	dial(t, client.h, serving)
	refusing := NewClient(client.h, refusingHost{rec}, ClientConfig{})
	_, err = refusing.Add(ctx, serving.ID())
	require.ErrorIs(t, err, errRefused)
	require.NoError(t, refusing.Close())

	require.NoError(t, client.Close())
	waitEnded(t, conn)
	_, err = client.Add(ctx, server.ID())
	require.ErrorIs(t, err, ErrClosed)
	require.Equal(t, []peer.ID{conn.ID()}, rec.disconnects(), "only the Conn that was started")
}

// A Conn closed before it starts never starts and never tells the Host:
// Start reports false, so whoever connected it knows to disconnect it.
func TestStartAfterCloseReportsFalse(t *testing.T) {
	client, rec, server, conn := pair(t, ClientConfig{})
	require.False(t, conn.Start(), "a second Start")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := client.h.NewStream(ctx, server.ID(), Protocol)
	require.NoError(t, err)
	unstarted := NewConn(s, "unstarted", rec, ConnConfig{})
	require.NoError(t, unstarted.Close())
	require.False(t, unstarted.Start())
	require.ErrorIs(t, unstarted.Send(1, ledger.GetObjects{}), ErrClosed)
	require.Empty(t, rec.disconnects())
}

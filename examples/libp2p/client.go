package libp2pnet

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/libp2p/go-libp2p/core/host"
	"github.com/libp2p/go-libp2p/core/network"
	p2ppeer "github.com/libp2p/go-libp2p/core/peer"

	"github.com/peersched/peersched/peer"
)

// DefaultChannels is what each peer is connected to the Host with when
// ClientConfig.Channels is zero.
const DefaultChannels = 4

// ErrAlreadyAdded is returned by Client.Add for a peer whose Conn is still
// up.
var ErrAlreadyAdded = errors.New("libp2pnet: peer already added")

// ClientConfig configures a Client. The zero value uses the defaults.
type ClientConfig struct {
	// Channels is what each peer is connected to the Host with. 0 means
	// DefaultChannels.
	Channels int
	// Conn tunes each stream.
	Conn ConnConfig
}

// Client brings libp2p peers to a Host: for each peer it is given it opens
// a stream of Protocol, wraps it in a Conn and connects that to the Host.
// It watches the libp2p host's connection notifications, so that a closed
// connection ends the Conn whose stream ran on it (and the Host hears
// Disconnect) even before the stream itself notices. It does not redial: a
// Conn that ended stays ended until the peer is added again.
//
// It is safe for concurrent use. Create one with NewClient; the zero value
// is not usable.
type Client struct {
	h        host.Host
	host     Host
	cfg      ClientConfig
	notifiee *network.NotifyBundle

	mu sync.Mutex
	// The following fields are guarded by mu.
	closed bool
	conns  map[p2ppeer.ID]*Conn // the latest Conn of each peer added
}

// NewClient returns a Client that connects the peers of h, a libp2p host,
// to host. Close it to end its Conns and stop its notifications.
func NewClient(h host.Host, host Host, cfg ClientConfig) *Client {
	if cfg.Channels <= 0 {
		cfg.Channels = DefaultChannels
	}
	c := &Client{h: h, host: host, cfg: cfg, conns: make(map[p2ppeer.ID]*Conn)}
	c.notifiee = &network.NotifyBundle{DisconnectedF: c.disconnected}
	h.Network().Notify(c.notifiee)
	return c
}

// Add opens a stream of Protocol to the peer pid (the libp2p host must be
// able to reach it: connected already, or with its addresses in the
// peerstore), connects it to the Host as a Conn named pid.String(), and
// starts it. ctx bounds opening the stream.
//
// It fails, leaving nothing behind, with ErrClosed after Close,
// ErrAlreadyAdded while the peer's last Conn is up, libp2p's error if the
// stream cannot be opened, or the Host's error from Connect.
func (c *Client) Add(ctx context.Context, pid p2ppeer.ID) (*Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: client", ErrClosed)
	}
	if old := c.conns[pid]; old != nil && !isDone(old) {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrAlreadyAdded, pid)
	}
	c.mu.Unlock()

	s, err := c.h.NewStream(ctx, pid, Protocol)
	if err != nil {
		return nil, fmt.Errorf("libp2pnet: open a stream to %s: %w", pid, err)
	}
	conn := NewConn(s, peer.ID(pid.String()), c.host, c.cfg.Conn)

	c.mu.Lock()
	if old := c.conns[pid]; c.closed || (old != nil && !isDone(old)) {
		// Closed, or a concurrent Add won, while the stream opened.
		closed := c.closed
		c.mu.Unlock()
		_ = conn.Close()
		if closed {
			return nil, fmt.Errorf("%w: client", ErrClosed)
		}
		return nil, fmt.Errorf("%w: %s", ErrAlreadyAdded, pid)
	}
	c.conns[pid] = conn
	c.mu.Unlock()

	if err := c.host.Connect(conn, c.cfg.Channels); err != nil {
		_ = conn.Close() // not started: the Host is not told
		return nil, err
	}
	if !conn.Start() {
		// Close ended it between the two locks above and here: the Host
		// was told Connect, so it is told Disconnect too.
		_ = c.host.Disconnect(conn.ID())
		return nil, fmt.Errorf("%w: client", ErrClosed)
	}
	return conn, nil
}

// Close stops the notifications, ends every Conn (the Host hears
// Disconnect for each one started) and waits for them. Add fails after it.
// It returns nil.
func (c *Client) Close() error {
	c.h.Network().StopNotify(c.notifiee)
	c.mu.Lock()
	c.closed = true
	conns := make([]*Conn, 0, len(c.conns))
	for _, conn := range c.conns {
		conns = append(conns, conn)
	}
	c.conns = nil
	c.mu.Unlock()
	for _, conn := range conns {
		_ = conn.Close()
	}
	return nil
}

// disconnected is the libp2p notification that conn closed. It runs on
// libp2p's goroutine, so it only marks the peer's Conn as ending (see
// Conn.connectionClosed), which never blocks.
func (c *Client) disconnected(_ network.Network, conn network.Conn) {
	c.mu.Lock()
	k := c.conns[conn.RemotePeer()]
	c.mu.Unlock()
	if k != nil {
		k.connectionClosed(conn)
	}
}

func isDone(c *Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

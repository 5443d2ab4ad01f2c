package tcpnet

import (
	"context"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/penalty"
)

// Defaults for the zero fields of ClientConfig.
const (
	DefaultChannels    = 4
	DefaultDialTimeout = 2 * time.Second
	DefaultRedialMin   = 50 * time.Millisecond
	DefaultRedialMax   = 30 * time.Second
	DefaultRedialReset = 10 * time.Second
)

// ClientConfig configures a Client. The zero value uses the defaults.
type ClientConfig struct {
	// Channels is what each peer is connected to the Host with. 0 means
	// DefaultChannels.
	Channels int
	// Conn tunes each connection.
	Conn ConnConfig
	// DialTimeout bounds one dial of the default TCP dialer; a Dial given
	// replaces it, timeout included. 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// RedialMin and RedialMax bound the wait before dialling again after a
	// failed dial or a lost connection. The wait doubles after each failed
	// dial and each connection that ended before RedialReset (a peer that
	// breaks the protocol, or times out, at once), and falls back to
	// RedialMin after a connection that lasted RedialReset, or that served
	// the Host an answer it took and did not end by breaking the protocol
	// (a frame over the cap, too many objects, a malformed frame): a peer
	// that restarts often but serves between restarts is redialled
	// promptly, one that lies or floods is not; each wait is
	// then jittered down by up to half (penalty.Jittered), from a source
	// seeded with Seed, so that the peers one client lost together are not
	// redialled together. 0 means DefaultRedialMin, DefaultRedialMax and
	// DefaultRedialReset.
	RedialMin, RedialMax, RedialReset time.Duration
	// Seed seeds the redial jitter.
	Seed uint64
	// Clock times the redial waits; nil means the real clock. (Dials and
	// connections run on real time: they talk to real sockets.)
	Clock clock.Clock
	// Ended, if set, is called after each of a peer's connections ends
	// (but one that Remove or Close ended), and after each failed dial or
	// refusal by the Host, with why: an error whose ReasonOf names
	// it (ReasonDialFailed, ReasonRefusedByHost, or the Conn's own, see
	// Conn.Err). It is called from the peer's supervisor goroutine, so it
	// must be quick, and must not call Close.
	Ended func(id peer.ID, why error)
	// Dial, if set, replaces the TCP dialer (for tests over net.Pipe).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Client keeps one connection up to each peer it is given, connecting each
// new Conn to its Host and dialling again, with back-off, whenever a
// connection is lost or a dial fails, until Close. It is safe for concurrent
// use. Create one with NewClient; the zero value is not usable.
type Client struct {
	host   Host
	cfg    ClientConfig
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// The following fields are guarded by mu.
	rng    *rand.Rand                     // the redial jitter
	dials  int                            // successful dials, over all peers
	closed bool                           // Close has begun: Add must not start a goroutine
	peers  map[peer.ID]context.CancelFunc // each added peer's supervisor, to Remove it
}

// NewClient returns a Client that connects peers to host.
func NewClient(host Host, cfg ClientConfig) *Client {
	if cfg.Channels <= 0 {
		cfg.Channels = DefaultChannels
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.RedialMin <= 0 {
		cfg.RedialMin = DefaultRedialMin
	}
	if cfg.RedialMax <= 0 {
		cfg.RedialMax = DefaultRedialMax
	}
	cfg.RedialMax = max(cfg.RedialMax, cfg.RedialMin)
	if cfg.RedialReset <= 0 {
		cfg.RedialReset = DefaultRedialReset
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.New()
	}
	if cfg.Dial == nil {
		timeout := cfg.DialTimeout
		cfg.Dial = func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{Timeout: timeout}
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Client{
		host: host, cfg: cfg, ctx: ctx, cancel: cancel,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x72656469616c)), // "redial"
		peers: make(map[peer.ID]context.CancelFunc),
	}
}

// Add keeps a connection to addr up as the peer named id, from now until
// Close. It returns at once; the first dial happens in the background. Add
// after Close does nothing. Adding the same id twice makes two connections
// that the Host sees as the same peer; the Host refuses the second while the
// first is connected, and the Client keeps trying, so do not.
func (c *Client) Add(id peer.ID, addr string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	stop := cancel
	if prev, ok := c.peers[id]; ok {
		// Two supervisors for one id: Remove stops both.
		stop = func() { prev(); cancel() }
	}
	c.peers[id] = stop
	c.wg.Add(1)
	go c.keep(ctx, id, addr)
}

// Remove stops keeping a connection to the peer named id, as a host does
// with a peer it has judged useless: its connection, if up, is closed (the
// Host is told, as for any lost connection) and the Client dials it no
// more. It returns at once, without waiting for the connection to close, so
// it may be called from the Host's callbacks. Removing an id that was never
// added, or removed already, does nothing.
func (c *Client) Remove(id peer.ID) {
	c.mu.Lock()
	cancel, ok := c.peers[id]
	delete(c.peers, id)
	c.mu.Unlock()
	if ok {
		cancel()
	}
}

// Dials returns how many connections the Client has established so far: a
// peer that was lost and came back counts twice.
func (c *Client) Dials() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

// Close closes every connection, each telling the Host, stops dialling, and
// waits until the Client's goroutines have all returned. It is idempotent.
// It must not be called from the Host's callbacks.
func (c *Client) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
}

// keep is one peer's supervisor: dial, connect, wait for the end, back
// off, repeat.
func (c *Client) keep(ctx context.Context, id peer.ID, addr string) {
	defer c.wg.Done()
	strikes := 0 // failed dials and short connections in a row
	for ctx.Err() == nil {
		nc, err := c.cfg.Dial(ctx, addr)
		if err != nil {
			c.ended(id, &EndError{Peer: string(id), Reason: ReasonDialFailed, Err: err})
			strikes++
			if !c.sleep(ctx, c.redialWait(strikes)) {
				return
			}
			continue
		}
		conn := NewConn(nc, id, c.host, c.cfg.Conn)
		if err := c.host.Connect(conn, c.cfg.Channels); err != nil {
			// The Host refused it (stopped, or the old connection of this
			// peer is not gone yet): try again later.
			_ = conn.Close()
			c.ended(id, &EndError{Peer: string(id), Reason: ReasonRefusedByHost, Err: err})
			if !c.sleep(ctx, c.redialWait(max(strikes, 1))) {
				return
			}
			continue
		}
		c.mu.Lock()
		c.dials++
		c.mu.Unlock()
		began := c.cfg.Clock.Now()
		conn.Start()
		select {
		case <-conn.Done():
		case <-ctx.Done():
			_ = conn.Close()
			return
		}
		c.ended(id, conn.Err())
		if c.cfg.Clock.Since(began) >= c.cfg.RedialReset ||
			conn.Taken() > 0 && !brokeProtocol(ReasonOf(conn.Err())) {
			strikes = 0
		}
		strikes++
		if !c.sleep(ctx, c.redialWait(strikes)) {
			return
		}
	}
}

// redialWait is the wait before the next dial after strikes failures in a
// row (the first after a connection that lasted counts 1): RedialMin
// doubled per strike after the first, capped at RedialMax, jittered.
func (c *Client) redialWait(strikes int) time.Duration {
	c.mu.Lock()
	u := c.rng.Float64()
	c.mu.Unlock()
	return penalty.Jittered(penalty.Backoff(c.cfg.RedialMin, c.cfg.RedialMax, strikes), u)
}

func (c *Client) ended(id peer.ID, why error) {
	if c.cfg.Ended != nil {
		c.cfg.Ended(id, why)
	}
}

// sleep waits d, or less if ctx (the Client's, or the peer's) ends; it
// reports whether ctx is still live.
func (c *Client) sleep(ctx context.Context, d time.Duration) bool {
	t := c.cfg.Clock.Timer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

package tcpnet

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// What a Server gives a hostile client, at most. Every connection costs a
// read buffer, two goroutines, an encode buffer kept between replies and
// the request frame it is reading; every reply waiting for its delay costs
// its objects' list (about 230 KB for wire.DefaultMaxItems objects: the
// objects' bytes are the ledger's, shared); every reply being written
// costs its encoding (up to the 4 MiB frame cap). Each is bounded, per
// connection and in total, so that no client, and no number of them, grows
// the server's memory without bound or pins it after leaving. With the
// defaults, the worst case is about 256 × (16 + 16 + 64 + 256) KB for the
// connections, 7 MB for the lists of the replies waiting (131,072 objects)
// and 32 MiB for those being written: about 130 MB besides the ledger.
// Served from Nodes that copy what they return (a node store on disk,
// ServerConfig.Nodes), the replies waiting also hold their objects'
// bytes: about 40 MB more for 131,072 nodes of a generated ledger's mean
// size (some 290 bytes).

// Defaults for the zero limits of ServerConfig.
const (
	DefaultMaxConns        = 256
	DefaultMaxConnsPerAddr = 8
	DefaultIdleTimeout     = 2 * time.Minute
	DefaultFrameTimeout    = 20 * time.Second
	DefaultWriteTimeout    = 20 * time.Second
	// DefaultMaxWaiting is above resource.DropSendQueue, so that a server
	// with rippled's limits drops queries, as rippled does, before it
	// stops reading a connection.
	DefaultMaxWaiting      = 256
	DefaultMaxWaitingTotal = 512
	// DefaultMaxWaitingObjects caps the objects of the replies waiting,
	// over all connections: their lists take about 56 bytes an object, so
	// 131,072 take 7 MB, where 512 replies of wire.DefaultMaxItems objects
	// would take 118 MB. Small replies, the usual ones, never reach it.
	DefaultMaxWaitingObjects = 1 << 17
	DefaultMaxReplyBytes     = 32 << 20
	// DefaultMaxRequestFrame caps a request's frame: a query for
	// wire.DefaultMaxItems hashes takes about 150 KB, so a client has no
	// honest use for more, and the cap is what a half-sent frame can make
	// the server allocate.
	DefaultMaxRequestFrame = 256 << 10

	// serverReadBuffer is a server connection's read buffer: requests
	// are small, and a large payload is read past it.
	serverReadBuffer = 16 << 10
	// keepEncodeBuffer is the largest encode buffer a connection keeps
	// between replies; a larger one, grown for a large reply, is let go
	// once written.
	keepEncodeBuffer = 64 << 10
	// Accept errors (out of file descriptors, say) are retried after a
	// back-off from acceptBackoffMin, doubling up to acceptBackoffMax.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// ServerLimits bounds what clients can make a Server hold. The zero value
// uses the defaults; a negative field is an error (NewServer).
type ServerLimits struct {
	// MaxConns caps the connections served at once. One accepted beyond it
	// is closed at once (ServerStats.Rejected), unless some address has
	// more connections than its own would then have: the newest connection
	// of the address with the most is closed to make room for it
	// (ServerStats.Evicted), so that clients of many addresses cannot keep
	// a client of another out. 0 means DefaultMaxConns.
	MaxConns int
	// MaxConnsPerAddr caps the connections from one remote IP address. 0
	// means DefaultMaxConnsPerAddr.
	MaxConnsPerAddr int
	// IdleTimeout closes a connection on which no frame begins for this
	// long (replies still due are abandoned). 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// FrameTimeout closes a connection whose frame, once begun, is not
	// whole within this long: the client that sends a frame a byte at a
	// time. 0 means DefaultFrameTimeout.
	FrameTimeout time.Duration
	// WriteTimeout closes a connection that does not take a reply within
	// this long: the client that never reads. 0 means
	// DefaultWriteTimeout.
	WriteTimeout time.Duration
	// MaxWaiting caps the replies of one connection that are planned and
	// not yet written (waiting for Behaviour.Latency, say); while it is
	// reached the connection reads no more requests, so TCP pushes back on
	// the client. 0 means DefaultMaxWaiting.
	MaxWaiting int
	// MaxWaitingTotal caps the same over all connections. 0 means
	// DefaultMaxWaitingTotal.
	MaxWaitingTotal int
	// MaxWaitingObjects caps the objects of those replies, over all
	// connections, so that large replies waiting cost a bounded memory
	// however few they are: the reader waits for room as for the other
	// two (a single reply above the cap waits until no other is waiting).
	// 0 means DefaultMaxWaitingObjects.
	MaxWaitingObjects int
	// MaxReplyBytes caps the bytes of encoded replies held at once over
	// all connections, while they are written; a reply waits for room. A
	// reply larger than the cap is written alone. 0 means
	// DefaultMaxReplyBytes.
	MaxReplyBytes int
}

// withDefaults returns l with its zero fields filled in, or an error for a
// negative one.
func (l ServerLimits) withDefaults() (ServerLimits, error) {
	if l.MaxConns < 0 || l.MaxConnsPerAddr < 0 || l.IdleTimeout < 0 || l.FrameTimeout < 0 || l.WriteTimeout < 0 ||
		l.MaxWaiting < 0 || l.MaxWaitingTotal < 0 || l.MaxWaitingObjects < 0 || l.MaxReplyBytes < 0 {
		return l, fmt.Errorf("negative limit in %+v", l)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&l.MaxConns, DefaultMaxConns)
	def(&l.MaxConnsPerAddr, DefaultMaxConnsPerAddr)
	def(&l.MaxWaiting, DefaultMaxWaiting)
	def(&l.MaxWaitingTotal, DefaultMaxWaitingTotal)
	def(&l.MaxWaitingObjects, DefaultMaxWaitingObjects)
	def(&l.MaxReplyBytes, DefaultMaxReplyBytes)
	defDur(&l.IdleTimeout, DefaultIdleTimeout)
	defDur(&l.FrameTimeout, DefaultFrameTimeout)
	defDur(&l.WriteTimeout, DefaultWriteTimeout)
	return l, nil
}

// remoteHost names the address a connection counts against for
// MaxConnsPerAddr: its remote IP (a pipe's "pipe", whole).
func remoteHost(nc net.Conn) string {
	a := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(a); err == nil {
		return h
	}
	return a
}

// isTimeout reports whether err is a deadline passing.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// budget is a count of units (bytes, replies) shared by goroutines that
// take some and give them back. It is safe for concurrent use.
type budget struct {
	max int

	mu     sync.Mutex
	used   int           // guarded by mu
	freed  chan struct{} // guarded by mu: closed, and replaced, when units come back
	inUsed int           // guarded by mu: the most ever used at once
}

func newBudget(max int) *budget {
	return &budget{max: max, freed: make(chan struct{})}
}

// take waits until n units are free and takes them, or returns false if
// cancel closes first. n above the whole budget waits until nothing is
// taken and then takes it all, so one oversized need is served alone.
func (b *budget) take(n int, cancel <-chan struct{}) bool {
	for {
		b.mu.Lock()
		if b.takeLocked(n) {
			b.mu.Unlock()
			return true
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-cancel:
			return false
		}
	}
}

// tryTake takes n units if they are free now (or nothing is taken), and
// reports whether it did; it never waits.
func (b *budget) tryTake(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(n)
}

// takeLocked takes n units if they fit (or nothing is taken), and reports
// whether it did. The caller holds b.mu.
func (b *budget) takeLocked(n int) bool {
	if b.used != 0 && b.used+n > b.max {
		return false
	}
	b.used += n
	b.inUsed = max(b.inUsed, b.used)
	return true
}

// give returns n units.
func (b *budget) give(n int) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// inUse returns the units taken now.
func (b *budget) inUse() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// peak returns the most units ever taken at once.
func (b *budget) peak() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inUsed
}

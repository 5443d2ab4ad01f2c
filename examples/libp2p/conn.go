package libp2pnet

import (
	"bufio"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/libp2p/go-libp2p/core/network"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/wire"
)

// Host consumes the peers a Client brings up: *scheduler.Scheduler is one.
// It is the same three methods as package fetch's Host, so a fetch.Peerset
// would do too.
type Host interface {
	Connect(p peer.Peer, channels int) error
	Disconnect(id peer.ID) error
	Deliver(from peer.ID, id peer.RequestID, response any) error
}

// Errors from Send, and the reasons a Conn ends (Conn.Err).
var (
	// ErrClosed: the Conn was closed by its owner (Conn.Close, Client.Close).
	ErrClosed = errors.New("libp2pnet: stream closed")
	// ErrQueueFull: the writer is behind by ConnConfig.QueueLen frames.
	ErrQueueFull = errors.New("libp2pnet: send queue full")
	// ErrConnectionLost: libp2p reported that the connection under the
	// stream closed (network.Notifiee's Disconnected).
	ErrConnectionLost = errors.New("libp2pnet: connection lost")
)

// DefaultQueueLen is the frames a Conn queues for its writer when
// ConnConfig.QueueLen is zero.
const DefaultQueueLen = 256

// bufferSize is the read and write buffer of a stream: a few replies.
const bufferSize = 64 << 10

// ConnConfig tunes a Conn. The zero value uses the defaults.
type ConnConfig struct {
	// QueueLen bounds the frames waiting for the writer; a Send beyond it
	// fails with ErrQueueFull. 0 means DefaultQueueLen.
	QueueLen int
	// MaxFrame caps the payload of a frame read (wire.ReadFrame); 0 means
	// wire.DefaultMaxFrame.
	MaxFrame int
	// MaxItems caps the objects of a message read (wire.DecodeMessage); 0
	// means wire.DefaultMaxItems.
	MaxItems int
}

// Conn is a peer.Peer over one libp2p stream of Protocol. It is safe for
// concurrent use.
//
// Its Send encodes the message and queues the frame for a writer
// goroutine, so it never waits for the network; a reader goroutine hands
// every message read to the Host's Deliver. The Conn ends when its owner
// closes it, when the stream fails (the remote reset it, a read or write
// error, a malformed frame), or when libp2p reports that the connection
// under the stream closed (the Client forwards network.Notifiee's
// Disconnected: see connectionClosed); whichever comes first. Once its
// reader and writer have stopped it calls the Host's Disconnect, exactly
// once, and closes Done.
//
// Create one with NewConn; the zero value is not usable.
type Conn struct {
	id       peer.ID
	stream   network.Stream
	host     Host
	maxFrame int
	maxItems int
	out      chan []byte // encoded frames for the writer

	closed   atomic.Bool   // set when the Conn starts to end: Send's fast path
	closing  chan struct{} // closed when it starts to end
	done     chan struct{} // closed when it has ended (see Done)
	failOnce sync.Once
	writer   sync.WaitGroup

	mu sync.Mutex
	// The following fields are guarded by mu.
	started bool
	err     error // why it ended
}

var _ peer.Peer = (*Conn)(nil)

// NewConn wraps s, a stream to the peer that the Host will know as id. It
// starts nothing: connect the Conn to the Host, then call Start. The Conn
// owns s from now on and resets it when it ends.
func NewConn(s network.Stream, id peer.ID, host Host, cfg ConnConfig) *Conn {
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	return &Conn{
		id:       id,
		stream:   s,
		host:     host,
		maxFrame: cfg.MaxFrame,
		maxItems: cfg.MaxItems,
		out:      make(chan []byte, cfg.QueueLen),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// ID returns the peer's ID: the remote libp2p peer ID, as text.
func (c *Conn) ID() peer.ID { return c.id }

// Send encodes message (a ledger.GetObjects, or whatever wire.AppendMessage
// accepts) under requestID and queues it for the writer. It never waits for
// the network. It fails, queuing nothing, with ErrClosed (or the Conn's
// other reason to end, see Err) once the Conn is ending, ErrQueueFull, or
// the encoder's error: wire.ErrUnknownType for a message it cannot encode,
// wire.ErrIDRange for an ID above 32 bits (give the scheduler RequestIDs).
// A queued message may still be lost if the stream ends before it is
// written; the Host learns that through Disconnect.
func (c *Conn) Send(requestID peer.RequestID, message any) error {
	if c.closed.Load() {
		return c.endedError()
	}
	frame, err := wire.AppendMessage(nil, uint64(requestID), message)
	if err != nil {
		return err
	}
	return c.enqueue(frame)
}

func (c *Conn) enqueue(frame []byte) error {
	select {
	case c.out <- frame:
		return nil
	default:
		return fmt.Errorf("%w: %q", ErrQueueFull, c.id)
	}
}

// endedError is Send's error once the Conn is ending: ErrClosed, or the
// reason it ended if that is not its owner's Close.
func (c *Conn) endedError() error {
	if err := c.Err(); err != nil && !errors.Is(err, ErrClosed) {
		return fmt.Errorf("%w: %q: %w", ErrClosed, c.id, err)
	}
	return fmt.Errorf("%w: %q", ErrClosed, c.id)
}

// Start starts the reader and the writer, and reports whether it did. Call
// it once, after connecting the Conn to its Host: from then on the Conn
// tells the Host when it ends. A later call does nothing and reports false;
// so does a call after the Conn has ended (closed before it started), and
// then the Host will not be told: the caller that connected the Conn must
// disconnect it.
func (c *Conn) Start() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.err != nil {
		return false
	}
	c.started = true
	c.writer.Add(1)
	go c.write()
	go c.read()
	return true
}

// Close ends the Conn, if it has not ended, and waits until it has: the
// reader and the writer have stopped and, if it was started, the Host has
// been told. It must not be called from the Host's Deliver, which runs on
// the reader. It returns nil.
func (c *Conn) Close() error {
	c.fail(ErrClosed)
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if !started {
		// Start can no longer start it (err is set), so nothing else
		// resets the stream or closes done.
		_ = c.stream.Reset()
		c.closeDone()
	}
	<-c.done
	return nil
}

// Done is closed when the Conn has ended and the Host has been told.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the Conn ended (ErrClosed, ErrConnectionLost, or the
// stream's error), or nil while it is up.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail starts the end of the Conn, recording err as its cause if it is the
// first. It never blocks, so libp2p's notification goroutine may call it: it
// only sets the stream's deadline in the past, which unblocks a read or
// write in progress (a stream's Reset may wait on its connection's send
// loop), and the writer resets the stream on its way out.
func (c *Conn) fail(err error) {
	c.failOnce.Do(func() {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		c.closed.Store(true)
		close(c.closing)
		_ = c.stream.SetDeadline(longAgo)
	})
}

// longAgo is a deadline that has passed.
var longAgo = time.Unix(1, 0)

// connectionClosed is libp2p's word that conn, a connection to this Conn's
// peer, closed. It ends the Conn if its stream ran on conn: a peer may have
// several connections, and the others' ends say nothing about this stream.
func (c *Conn) connectionClosed(conn network.Conn) {
	if c.stream.Conn() == conn {
		c.fail(fmt.Errorf("%w: %s", ErrConnectionLost, conn.ID()))
	}
}

func (c *Conn) closeDone() {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-c.done:
	default:
		close(c.done)
	}
}

// read is the reader goroutine. It owns the end of a started Conn: once
// reading fails it waits for the writer (which resets the stream), tells the
// Host, and closes done.
func (c *Conn) read() {
	defer func() {
		c.writer.Wait()
		_ = c.host.Disconnect(c.id) // ErrUnknownPeer or ErrStopped: nothing to undo
		c.closeDone()
	}()
	br := bufio.NewReaderSize(c.stream, bufferSize)
	for {
		f, err := wire.ReadFrame(br, c.maxFrame)
		if err != nil {
			c.fail(fmt.Errorf("read from %q: %w", c.id, err))
			return
		}
		id, msg, err := wire.DecodeMessage(f, c.maxItems)
		if err != nil {
			c.fail(fmt.Errorf("bad %v frame from %q: %w", f.Type, c.id, err))
			return
		}
		switch msg.(type) {
		case wire.Ping:
			pong, _ := wire.AppendMessage(nil, id, wire.Pong{})
			_ = c.enqueue(pong) // a full queue drops the pong: the peer asks again
		case wire.Pong:
		default:
			// Whatever came under a request ID goes to the Host, which
			// checks the ID, the sender and (the fetch does) the type.
			_ = c.host.Deliver(c.id, peer.RequestID(id), msg)
		}
	}
}

// write is the writer goroutine: it writes queued frames through a buffer,
// flushing whenever the queue is empty, until the Conn starts to end; then
// it resets the stream, so that the peer hears of the end at once.
func (c *Conn) write() {
	defer c.writer.Done()
	defer func() { _ = c.stream.Reset() }()
	bw := bufio.NewWriterSize(c.stream, bufferSize)
	for {
		select {
		case <-c.closing:
			return
		case frame := <-c.out:
			if err := writeQueued(bw, frame, c.out); err != nil {
				c.fail(fmt.Errorf("write to %q: %w", c.id, err))
				return
			}
		}
	}
}

// writeQueued writes frame and every frame queued behind it, then flushes.
func writeQueued(bw *bufio.Writer, frame []byte, queue <-chan []byte) error {
	for {
		if _, err := bw.Write(frame); err != nil {
			return err
		}
		select {
		case frame = <-queue:
			continue
		default:
		}
		return bw.Flush()
	}
}

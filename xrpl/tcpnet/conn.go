package tcpnet

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/wire"
)

// Host consumes a transport's peers: *scheduler.Scheduler and
// *fetch.Peerset both are Hosts.
type Host interface {
	Connect(p peer.Peer, channels int) error
	Disconnect(id peer.ID) error
	Deliver(from peer.ID, id peer.RequestID, response any) error
}

// Errors from Send.
var (
	// ErrClosed: the connection has ended.
	ErrClosed = errors.New("tcpnet: connection closed")
	// ErrQueueFull: the writer is behind by ConnConfig.QueueLen frames.
	ErrQueueFull = errors.New("tcpnet: send queue full")
)

// Defaults for the zero fields of ConnConfig.
const (
	DefaultQueueLen      = 256
	DefaultAnswerTimeout = 30 * time.Second
	bufferSize           = 64 << 10
)

// ConnConfig tunes a Conn. The zero value uses the defaults.
type ConnConfig struct {
	// QueueLen bounds the frames waiting for the writer. 0 means
	// DefaultQueueLen.
	QueueLen int
	// MaxFrame caps the payload of a frame read (see wire.ReadFrame); 0
	// means wire.DefaultMaxFrame.
	MaxFrame int
	// MaxItems caps the items of a payload read (see wire.DecodeMessage);
	// 0 means wire.DefaultMaxItems.
	MaxItems int
	// AnswerTimeout ends the connection (ReasonIdle) when the peer, asked
	// something (a query or a ping sent and not answered by a frame), sends
	// no frame for this long, or takes longer than this over one frame: a
	// peer that never reads our queries, or sends a frame a byte at a
	// time. A peer asked nothing may stay silent. 0 means
	// DefaultAnswerTimeout; a negative value never times out.
	AnswerTimeout time.Duration
	// Traffic, if set, is told of every message frame the Conn hands to
	// the Host's Deliver, with its size on the wire and Deliver's error: nil
	// for an answer the Host took, else why it refused it (late, duplicate,
	// unasked, of the wrong type...); and of every unsolicited pong, with
	// ErrUnsolicited. (Pings, and the pongs the Conn asked for, are not
	// reported.) It is called from the reader, so it
	// must be quick; the fetch uses it to count unwanted bytes against the
	// peer (fetch.Config.Traffic).
	Traffic func(from peer.ID, bytes int, deliverErr error)
	// Skipped, if set, is told of every frame the peer sent of a type the
	// Conn does not decode (a status change, a manifest, endpoints...),
	// which it skips, as rippled does, instead of closing the connection.
	// It is called from the reader, so it must be quick.
	Skipped func(from peer.ID, t wire.Type)
}

// ErrUnsolicited is the error ConnConfig.Traffic is told of for a pong the
// Conn sent no ping for: unwanted bytes, not a reason to close.
var ErrUnsolicited = errors.New("tcpnet: unsolicited pong")

// Conn is the host's side of one TCP connection to a peer. It implements
// peer.Peer and is safe for concurrent use.
//
// Its life: NewConn wraps a net.Conn; the host connects the Conn to its Host
// and then calls Start, which starts the reader and the writer. From then on
// every response read goes to Host.Deliver, and when the connection ends, for
// whatever reason (Close, a read or write error, a bad frame), the Conn
// calls Host.Disconnect once, after its reader and writer have stopped, and
// then closes Done. A Conn closed before Start never calls the Host.
//
// Create a Conn with NewConn; the zero value is not usable.
type Conn struct {
	id       peer.ID
	nc       net.Conn
	host     Host
	maxFrame int
	maxItems int
	answerIn time.Duration // <= 0: never
	traffic  func(peer.ID, int, error)
	skipped  func(peer.ID, wire.Type)
	out      chan []byte // encoded frames for the writer

	pings   atomic.Int64 // pings sent and not answered by a pong
	unknown atomic.Int64 // frames skipped for their type
	taken   atomic.Int64 // responses the Host took (Deliver returned nil)

	closed    atomic.Bool   // mirrors err != nil, for Send's fast path
	closing   chan struct{} // closed when the connection starts to end
	done      chan struct{} // closed when it has ended (see Done)
	closeOnce sync.Once
	doneOnce  sync.Once
	writer    sync.WaitGroup

	mu sync.Mutex
	// The following fields are guarded by mu.
	started bool
	err     error // why it ended: an *EndError

	dl sync.Mutex
	// The following fields are guarded by dl: the read deadline of
	// AnswerTimeout (see armLocked).
	asked    int  // queries and pings sent and not answered by a frame
	midFrame bool // the reader is inside a frame
}

var _ peer.Peer = (*Conn)(nil)

// NewConn wraps nc, a connection to the peer named id, whose responses go to
// host. It starts nothing: call Start once the Conn is connected to host.
func NewConn(nc net.Conn, id peer.ID, host Host, cfg ConnConfig) *Conn {
	if cfg.QueueLen <= 0 {
		cfg.QueueLen = DefaultQueueLen
	}
	if cfg.AnswerTimeout == 0 {
		cfg.AnswerTimeout = DefaultAnswerTimeout
	}
	return &Conn{
		id:       id,
		nc:       nc,
		host:     host,
		maxFrame: cfg.MaxFrame,
		maxItems: cfg.MaxItems,
		answerIn: cfg.AnswerTimeout,
		traffic:  cfg.Traffic,
		skipped:  cfg.Skipped,
		out:      make(chan []byte, cfg.QueueLen),
		closing:  make(chan struct{}),
		done:     make(chan struct{}),
	}
}

// ID returns the peer's ID.
func (c *Conn) ID() peer.ID { return c.id }

// Send encodes message (a ledger.GetObjects, or whatever wire.AppendMessage
// accepts) under requestID and queues it for the writer. It never blocks. It
// fails, queuing nothing, with ErrClosed, ErrQueueFull, or the encoder's
// error: wire.ErrUnknownType for a message it cannot encode, wire.ErrIDRange
// for an ID above 32 bits (give the scheduler RequestIDs()). A message that
// was queued may still be lost if the connection ends before it is written;
// the host learns of that through Disconnect.
func (c *Conn) Send(requestID peer.RequestID, message any) error {
	if c.closed.Load() {
		return fmt.Errorf("%w: %q", ErrClosed, c.id)
	}
	frame, err := wire.AppendMessage(nil, uint64(requestID), message)
	if err != nil {
		return err
	}
	// Counted as asked before it is queued: once queued, the writer may
	// send it and the peer answer it before this goroutine runs again, and
	// an answer counted first would leave the question counted as
	// unanswered (the connection dropped as idle AnswerTimeout later, a
	// pong taken as unsolicited).
	_, ping := message.(wire.Ping)
	if ping {
		c.pings.Add(1)
	}
	c.asking()
	if err := c.enqueue(frame); err != nil {
		if ping {
			c.pings.Add(-1)
		}
		c.unasking()
		return err
	}
	if sendQueued != nil {
		sendQueued()
	}
	return nil
}

// sendQueued, if set, is called by Send once it has queued a frame and
// counted it: tests set it to let the peer answer at that moment.
var sendQueued func()

// Skipped returns how many frames the peer sent of types the Conn does not
// decode, and skipped.
func (c *Conn) Skipped() int { return int(c.unknown.Load()) }

// Taken returns how many responses on the connection the Host took (its
// Deliver returned nil): answers to requests still waiting for them.
func (c *Conn) Taken() int { return int(c.taken.Load()) }

// pongExpected takes back one unanswered ping, if any, and reports whether
// there was one.
func (c *Conn) pongExpected() bool {
	for {
		n := c.pings.Load()
		if n <= 0 {
			return false
		}
		if c.pings.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// asking counts a query or ping sent, which the peer should answer; the
// first of them unanswered starts the AnswerTimeout.
func (c *Conn) asking() {
	if c.answerIn <= 0 {
		return
	}
	c.dl.Lock()
	defer c.dl.Unlock()
	c.asked++
	if c.asked == 1 && !c.midFrame {
		c.armLocked()
	}
}

// unasking takes back what asking counted, for a frame that was not sent
// after all.
func (c *Conn) unasking() {
	if c.answerIn <= 0 {
		return
	}
	c.dl.Lock()
	defer c.dl.Unlock()
	if c.asked > 0 {
		c.asked--
	}
	if c.asked == 0 && !c.midFrame {
		c.armLocked()
	}
}

// armLocked sets the read deadline: AnswerTimeout from now while the peer
// is inside a frame or owes an answer, none otherwise. The caller holds dl.
func (c *Conn) armLocked() {
	var at time.Time
	if c.midFrame || c.asked > 0 {
		at = time.Now().Add(c.answerIn)
	}
	_ = c.nc.SetReadDeadline(at)
}

// frameBegins and frameEnds tell the deadline where the reader is; answered
// says the frame was an answer, which the peer owed.
func (c *Conn) frameBegins() {
	if c.answerIn <= 0 {
		return
	}
	c.dl.Lock()
	defer c.dl.Unlock()
	c.midFrame = true
	c.armLocked()
}

func (c *Conn) frameEnds(answered bool) {
	if c.answerIn <= 0 {
		return
	}
	c.dl.Lock()
	defer c.dl.Unlock()
	c.midFrame = false
	if answered && c.asked > 0 {
		c.asked--
	}
	c.armLocked()
}

func (c *Conn) enqueue(frame []byte) error {
	select {
	case c.out <- frame:
		return nil
	default:
		return fmt.Errorf("%w: %q", ErrQueueFull, c.id)
	}
}

// Start starts the reader and writer goroutines. Call it once, after
// connecting the Conn to its Host; a second call does nothing.
func (c *Conn) Start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started || c.err != nil {
		return
	}
	c.started = true
	c.writer.Add(1)
	go c.write()
	go c.read()
}

// Close ends the connection, if it has not ended, and waits until it has:
// the reader and writer have stopped and, if the Conn was started, the Host
// has been told. It must not be called from the Host's Deliver (which runs
// on the reader). It returns nil.
func (c *Conn) Close() error {
	c.fail(ReasonClosed, ErrClosed)
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if !started {
		// Start can no longer start it (err is set), so nobody else
		// closes done.
		c.doneOnce.Do(func() { close(c.done) })
	}
	<-c.done
	return nil
}

// Done is closed when the connection has ended and the Host has been told.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns why the connection ended, or nil while it is up: an
// *EndError naming the Reason (see ReasonOf) and wrapping the error behind
// it (ErrClosed after Close, or the read, write or frame error).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// fail starts the end of the connection, recording why if it is the first.
// Closing the socket unblocks the reader.
func (c *Conn) fail(why Reason, err error) {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.err = &EndError{Peer: string(c.id), Reason: why, Err: err}
		c.mu.Unlock()
		c.closed.Store(true)
		close(c.closing)
		_ = c.nc.Close()
	})
}

// read is the reader goroutine. It owns the end of a started connection:
// once reading fails it waits for the writer, tells the Host, and closes
// done.
func (c *Conn) read() {
	defer func() {
		c.writer.Wait()
		_ = c.host.Disconnect(c.id) // ErrUnknownPeer or ErrStopped: nothing to undo
		c.doneOnce.Do(func() { close(c.done) })
	}()
	br := bufio.NewReaderSize(c.nc, bufferSize)
	for {
		if _, err := br.Peek(1); err != nil {
			c.fail(readReason(err), fmt.Errorf("read: %w", err))
			return
		}
		c.frameBegins()
		f, err := wire.ReadFrame(br, c.maxFrame)
		if errors.Is(err, wire.ErrUnknownType) {
			// Skipped whole, as rippled skips what it does not know:
			// rippled peers send status changes, manifests, endpoints
			// and more to everyone, unprompted.
			c.frameEnds(false)
			c.unknown.Add(1)
			if c.skipped != nil {
				c.skipped(c.id, f.Type)
			}
			continue
		}
		if err != nil {
			c.fail(readReason(err), fmt.Errorf("read: %w", err))
			return
		}
		id, msg, err := wire.DecodeMessage(f, c.maxItems)
		if err != nil {
			c.fail(frameReason(err, ReasonTooManyItems), fmt.Errorf("bad %v frame: %w", f.Type, err))
			return
		}
		switch msg.(type) {
		case wire.Ping:
			c.frameEnds(false)
			pong, _ := wire.AppendMessage(nil, id, wire.Pong{})
			_ = c.enqueue(pong) // a full queue drops the pong: the peer asks again
		case wire.Pong:
			if c.pongExpected() {
				c.frameEnds(true)
				break
			}
			// Unsolicited: counted against the peer, not fatal.
			c.frameEnds(false)
			if c.traffic != nil {
				c.traffic(c.id, wire.HeaderSize+len(f.Payload), ErrUnsolicited)
			}
		default:
			c.frameEnds(true)
			// Whatever came under a request ID goes to the Host, which
			// checks the ID, the sender and (the fetch does) the type.
			err := c.host.Deliver(c.id, peer.RequestID(id), msg)
			if err == nil {
				c.taken.Add(1)
			}
			if c.traffic != nil {
				c.traffic(c.id, wire.HeaderSize+len(f.Payload), err)
			}
		}
	}
}

// write is the writer goroutine: it writes queued frames through a buffer
// and flushes whenever the queue is empty, so a burst costs one syscall.
func (c *Conn) write() {
	defer c.writer.Done()
	bw := bufio.NewWriterSize(c.nc, bufferSize)
	for {
		select {
		case <-c.closing:
			return
		case frame := <-c.out:
			if err := writeQueued(bw, frame, c.out); err != nil {
				c.fail(ReasonWriteFailed, fmt.Errorf("write: %w", err))
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

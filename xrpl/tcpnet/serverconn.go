package tcpnet

import (
	"bufio"
	"container/heap"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// serverConn is one accepted connection: a reader that plans the replies to
// each request, and a responder that writes each reply when it is due. One
// goroutine and one timer per connection hold every delayed reply, rather
// than a timer per reply, so that closing the connection leaves nothing
// behind.
//
// What it holds is bounded (see ServerLimits): the reader takes a unit of
// the connection's waiting budget and of the server's for each reply it
// plans, and waits for room before it reads on, so a client that sends
// faster than its replies fall due, or never reads them, stops being read;
// the responder gives the units back as it writes each reply, and takes the
// reply's encoded bytes from the server's reply budget while it writes them.
type serverConn struct {
	s         *Server
	nc        net.Conn
	addr      string // what it counts against in MaxConnsPerAddr
	in        chan timedReply
	waiting   *budget // this connection's replies planned and not yet written
	closing   chan struct{}
	closeOnce sync.Once

	// Replies counted in the server's waiting budget and not given back;
	// the last of the reader and the responder to return gives back what
	// is left (see exit).
	held    atomic.Int64
	live    atomic.Int32
	encoded atomic.Int64 // capacity of the responder's encode buffer, for tests and Stats
}

// timedReply is a reply and the moment it is due; seq keeps replies due at
// the same moment in the order they were planned.
type timedReply struct {
	at  time.Time
	seq uint64
	reply
}

func newServerConn(s *Server, nc net.Conn, addr string) *serverConn {
	c := &serverConn{
		s:       s,
		nc:      nc,
		addr:    addr,
		in:      make(chan timedReply, s.limits.MaxWaiting),
		waiting: newBudget(s.limits.MaxWaiting),
		closing: make(chan struct{}),
	}
	c.live.Store(2)
	return c
}

func (c *serverConn) close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		_ = c.nc.Close()
	})
}

// exit is the end of the reader and of the responder; the second gives
// back the server's waiting units that the connection still holds (replies
// that were never written).
func (c *serverConn) exit() {
	if c.live.Add(-1) == 0 {
		c.s.waiting.give(int(c.held.Swap(0)))
	}
	c.s.wg.Done()
}

// read reads requests until the connection fails, a frame is bad or late,
// which closes it.
func (c *serverConn) read() {
	why := endClosed
	defer func() {
		c.close()
		c.s.forget(c, why)
		c.exit()
	}()
	br := bufio.NewReaderSize(c.nc, serverReadBuffer)
	var replies []reply
	var seq uint64
	lim := &c.s.limits
	for {
		// Idle until a frame begins; from its first byte, the whole
		// frame must come within FrameTimeout.
		_ = c.nc.SetReadDeadline(time.Now().Add(lim.IdleTimeout))
		if _, err := br.Peek(1); err != nil {
			why = readEnd(err)
			return
		}
		_ = c.nc.SetReadDeadline(time.Now().Add(lim.FrameTimeout))
		f, err := wire.ReadFrame(br, c.s.cfg.MaxFrame)
		if err != nil {
			why = readEnd(err)
			return
		}
		id, msg, err := wire.DecodeMessage(f, c.s.cfg.MaxItems)
		if err != nil {
			why = endRefused
			return
		}
		var now time.Time
		drop := false
		switch m := msg.(type) {
		case ledger.GetObjects:
			replies, now, drop = c.s.plan(replies[:0], c, id, m)
		case wire.Ping:
			now = time.Now()
			replies = append(replies[:0], reply{id: id, msg: wire.Pong{}})
		default:
			why = endRefused // a client sends queries and pings, nothing else
			return
		}
		for _, r := range replies {
			seq++
			if !c.waiting.take(1, c.closing) {
				return
			}
			if !c.s.waiting.take(1, c.closing) {
				c.waiting.give(1)
				return
			}
			c.held.Add(1)
			// Never blocks: in holds MaxWaiting, and waiting counts
			// every reply in it.
			c.in <- timedReply{at: now.Add(r.delay), seq: seq, reply: r}
		}
		clear(replies) // the replies' objects belong to the responder now
		if drop {
			c.s.drop()
			return
		}
	}
}

// How a server connection ended, for ServerStats.
type connEnd uint8

const (
	endClosed   connEnd = iota // the client left, or the server closed it
	endRefused                 // a bad frame
	endTimedOut                // idle, a half-sent frame, or a reply not taken
)

// readEnd says how a read error ends the connection.
func readEnd(err error) connEnd {
	switch {
	case badFrame(err):
		return endRefused
	case isTimeout(err):
		return endTimedOut
	}
	return endClosed
}

// badFrame reports whether err says the peer sent something wrong, as
// opposed to the connection ending.
func badFrame(err error) bool {
	return errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrOversized) || errors.Is(err, wire.ErrUnknownType)
}

// respond writes replies as they fall due, a buffer's worth per write.
func (c *serverConn) respond() {
	defer c.exit()
	var due replyHeap
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var buf []byte
	for {
		var wake <-chan time.Time
		if len(due) > 0 {
			timer.Reset(time.Until(due[0].at))
			wake = timer.C
		}
		select {
		case r := <-c.in:
			heap.Push(&due, r)
		case <-wake:
		case <-c.closing:
			return
		}
		timer.Stop()
		for len(due) > 0 && !due[0].at.After(time.Now()) {
			var ok bool
			if buf, ok = c.writeDue(&due, buf[:0]); !ok {
				c.close()
				return
			}
		}
	}
}

// writeDue encodes the replies due now into buf, up to a buffer's worth
// (one reply at least), writes them, gives back their waiting units, and
// returns buf for the next batch: the same, or nil if a large reply grew it
// past keepEncodeBuffer, so that a connection does not keep the largest
// reply it ever wrote. It reports false if the connection failed.
func (c *serverConn) writeDue(due *replyHeap, buf []byte) ([]byte, bool) {
	written, bytes := 0, 0
	defer func() {
		c.s.replyBytes.give(bytes)
		c.waiting.give(written)
		c.s.waiting.give(written)
		c.held.Add(int64(-written))
	}()
	for len(*due) > 0 && !(*due)[0].at.After(time.Now()) && (written == 0 || len(buf) < keepEncodeBuffer) {
		r := heap.Pop(due).(timedReply)
		n := wire.MessageSize(r.id, r.msg)
		if !c.s.replyBytes.take(n, c.closing) {
			return buf, false
		}
		bytes += n
		var err error
		if buf, err = wire.AppendMessage(buf, r.id, r.msg); err != nil {
			return buf, false
		}
		written++
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.limits.WriteTimeout))
	if _, err := c.nc.Write(buf); err != nil {
		if isTimeout(err) {
			c.s.countTimedOut()
		}
		return buf, false
	}
	c.s.countReplies(written)
	if cap(buf) > keepEncodeBuffer {
		buf = nil
	}
	c.encoded.Store(int64(cap(buf)))
	return buf, true
}

// replyHeap orders timed replies by (at, seq).
type replyHeap []timedReply

func (h replyHeap) Len() int { return len(h) }
func (h replyHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h replyHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *replyHeap) Push(x any)   { *h = append(*h, x.(timedReply)) }
func (h *replyHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = timedReply{}
	*h = old[:len(old)-1]
	return r
}

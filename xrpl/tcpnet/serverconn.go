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
	"github.com/peersched/peersched/xrpl/resource"
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
	seq       uint64 // its order of arrival (Server.connSeq)
	in        chan timedReply
	waiting   *budget // this connection's replies planned and not yet written
	closing   chan struct{}
	closeOnce sync.Once

	// Replies counted in the server's waiting budget and not given back;
	// the last of the reader and the responder to return gives back what
	// is left (see exit).
	held    atomic.Int64
	heldObj atomic.Int64 // the same, for the server's objects budget
	live    atomic.Int32
	encoded atomic.Int64 // capacity of the responder's encode buffer, for tests and Stats

	pings   atomic.Int64 // chatter pings sent and not yet answered by a pong
	chatter uint32       // the responder's: chatter frames it has sent
}

// timedReply is a reply and the moment it is due; seq keeps replies due at
// the same moment in the order they were planned; echo is what a reply of
// objects copies from its query.
type timedReply struct {
	at      time.Time
	seq     uint64
	echo    wire.Echo
	objects int // units of the server's objects budget it holds
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
		c.s.objects.give(int(c.heldObj.Swap(0)))
	}
	c.s.wg.Done()
}

// read reads requests until the connection fails, a frame is bad or late,
// or the client's charges cut it, which closes it.
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
		if errors.Is(err, wire.ErrUnknownType) {
			// Skipped whole, at no charge, as rippled does.
			c.s.count(func(st *ServerStats) *int { return &st.UnknownFrames })
			continue
		}
		if err != nil {
			why = readEnd(err)
			return
		}
		id, msg, echo, err := wire.DecodeRequest(f, c.s.cfg.MaxItems)
		if err != nil {
			why = endRefused
			return
		}
		var now time.Time
		drop := false
		fee := resource.FeeTrivial
		switch m := msg.(type) {
		case ledger.GetObjects:
			fee = resource.FeeQuery
			if !c.s.cfg.LimitsOff && resource.Busy(c.waiting.inUse()) {
				// Dropped unanswered: the client sees only a
				// missing reply. rippled charges only the
				// trivial fee for a query it never handled.
				fee = resource.FeeTrivial
				replies = replies[:0]
				c.s.count(func(st *ServerStats) *int { return &st.BusyDrops })
				break
			}
			replies, now, drop = c.s.plan(replies[:0], c, id, m)
		case wire.Ping:
			fee = resource.FeeQuery
			now = time.Now()
			replies = append(replies[:0], reply{id: id, msg: wire.Pong{}})
		case wire.Pong:
			replies = replies[:0]
			if !c.pingAnswered() {
				fee = resource.FeeUselessData
				c.s.count(func(st *ServerStats) *int { return &st.Useless })
			}
		default: // a reply nobody asked for
			replies = replies[:0]
			fee = resource.FeeUselessData
			c.s.count(func(st *ServerStats) *int { return &st.Useless })
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
			objects := 0
			if m, ok := r.msg.(ledger.Objects); ok {
				objects = len(m.Items)
			}
			if !c.s.objects.take(objects, c.closing) {
				return
			}
			c.heldObj.Add(int64(objects))
			// Never blocks: in holds MaxWaiting, and waiting counts
			// every reply in it.
			c.in <- timedReply{at: now.Add(r.delay), seq: seq, reply: r, echo: echo, objects: objects}
		}
		clear(replies) // the replies' objects belong to the responder now
		if drop {
			c.s.drop()
			return
		}
		// Charged once handled, as rippled charges at the end of each
		// message: a cut loses the replies just planned with the
		// connection.
		if c.s.charge(c, fee) {
			why = endCharged
			return
		}
	}
}

// pingAnswered takes back one of the chatter pings this connection sent, if
// any is unanswered, and reports whether there was one: a pong without one
// is unsolicited.
func (c *serverConn) pingAnswered() bool {
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

// How a server connection ended, for ServerStats.
type connEnd uint8

const (
	endClosed   connEnd = iota // the client left, or the server closed it
	endRefused                 // a bad frame
	endTimedOut                // idle, a half-sent frame, or a reply not taken
	endCharged                 // its address's charges reached resource.DropThreshold
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
	if c.s.cfg.Chatty {
		// rippled greets a new peer with its state, its manifests and
		// the peers it knows.
		for range 3 {
			buf = c.appendChatter(buf)
		}
		if !c.write(buf, 0, 0) {
			c.close()
			return
		}
		buf = buf[:0]
	}
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
//
// Only the batch's first reply waits for room in the server's reply
// bytes (MaxReplyBytes), while the connection holds none; a later one
// that finds no room ends the batch and waits for the next. Waiting for
// room while holding some would wait for this very connection's bytes,
// which come back only once its batch is written (it did: a batch whose
// due replies came to more than the cap never went out), or, across
// connections, for one another's.
func (c *serverConn) writeDue(due *replyHeap, buf []byte) ([]byte, bool) {
	written, bytes, units, sent := 0, 0, 0, 0
	defer func() {
		c.s.replyBytes.give(bytes)
		c.waiting.give(written)
		c.s.waiting.give(written)
		c.held.Add(int64(-written))
		c.s.objects.give(units)
		c.heldObj.Add(int64(-units))
	}()
	for len(*due) > 0 && !(*due)[0].at.After(time.Now()) && (written == 0 || len(buf) < keepEncodeBuffer) {
		r := (*due)[0]
		objects, isReply := r.msg.(ledger.Objects)
		var n int // each size builds the message to measure it: once only
		if isReply {
			n = wire.ReplySize(r.id, objects, r.echo)
		} else {
			n = wire.MessageSize(r.id, r.msg)
		}
		if written > 0 {
			if !c.s.replyBytes.tryTake(n) {
				break // written with the next batch
			}
		} else if !c.s.replyBytes.take(n, c.closing) {
			return buf, false
		}
		heap.Pop(due)
		units += r.objects // its list is the responder's to drop now
		bytes += n
		if c.s.cfg.Chatty {
			buf = c.appendChatter(buf)
		}
		var err error
		if isReply {
			buf, err = wire.AppendReply(buf, r.id, objects, r.echo)
			sent += len(objects.Items)
		} else {
			buf, err = wire.AppendMessage(buf, r.id, r.msg)
		}
		if err != nil {
			return buf, false
		}
		written++
	}
	if !c.write(buf, written, sent) {
		return buf, false
	}
	if cap(buf) > keepEncodeBuffer {
		buf = nil
	}
	c.encoded.Store(int64(cap(buf)))
	return buf, true
}

// write writes buf, which holds replies replies carrying objects objects,
// within WriteTimeout, and reports whether it could.
func (c *serverConn) write(buf []byte, replies, objects int) bool {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.s.limits.WriteTimeout))
	if _, err := c.nc.Write(buf); err != nil {
		if isTimeout(err) {
			c.s.countTimedOut()
		}
		return false
	}
	c.s.countReplies(replies, objects)
	return true
}

// chatterTypes are what a Chatty server sends unprompted, in turn.
var chatterTypes = [...]wire.Type{wire.TypeStatusChange, wire.TypeManifests, wire.TypeEndpoints, wire.TypePing}

// appendChatter appends the next frame a Chatty server sends unprompted.
// Its pings are counted, so that their pongs are not charged as
// unsolicited.
func (c *serverConn) appendChatter(buf []byte) []byte {
	t := chatterTypes[c.chatter%uint32(len(chatterTypes))]
	c.chatter++
	if t == wire.TypePing {
		c.pings.Add(1)
	}
	c.s.count(func(st *ServerStats) *int { return &st.Chatter })
	// Chatter types always encode.
	out, _ := wire.AppendChatter(buf, t, c.chatter)
	return out
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

package tcpnet

import (
	"bufio"
	"container/heap"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire"
)

// serverConn is one accepted connection: a reader that plans the replies to
// each request, and a responder that writes each reply when it is due. One
// goroutine and one timer per connection hold every delayed reply, rather
// than a timer per reply, so that closing the connection leaves nothing
// behind.
type serverConn struct {
	s         *Server
	nc        net.Conn
	in        chan timedReply
	closing   chan struct{}
	closeOnce sync.Once
}

// timedReply is a reply and the moment it is due; seq keeps replies due at
// the same moment in the order they were planned.
type timedReply struct {
	at  time.Time
	seq uint64
	reply
}

func newServerConn(s *Server, nc net.Conn) *serverConn {
	return &serverConn{s: s, nc: nc, in: make(chan timedReply, 64), closing: make(chan struct{})}
}

func (c *serverConn) close() {
	c.closeOnce.Do(func() {
		close(c.closing)
		_ = c.nc.Close()
	})
}

// read reads requests until the connection fails or a frame is bad, which
// closes it.
func (c *serverConn) read() {
	refused := false
	defer func() {
		c.close()
		c.s.forget(c, refused)
		c.s.wg.Done()
	}()
	br := bufio.NewReaderSize(c.nc, bufferSize)
	var replies []reply
	var seq uint64
	for {
		f, err := wire.ReadFrame(br, c.s.cfg.MaxFrame)
		if err != nil {
			refused = badFrame(err)
			return
		}
		id, msg, err := wire.DecodeMessage(f, c.s.cfg.MaxItems)
		if err != nil {
			refused = true
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
			refused = true // a client sends queries and pings, nothing else
			return
		}
		for _, r := range replies {
			seq++
			select {
			case c.in <- timedReply{at: now.Add(r.delay), seq: seq, reply: r}:
			case <-c.closing:
				return
			}
		}
		if drop {
			c.s.drop()
			return
		}
	}
}

// badFrame reports whether err says the peer sent something wrong, as
// opposed to the connection ending.
func badFrame(err error) bool {
	return errors.Is(err, wire.ErrMalformed) || errors.Is(err, wire.ErrOversized) || errors.Is(err, wire.ErrUnknownType)
}

// respond writes replies as they fall due, flushing once per batch.
func (c *serverConn) respond() {
	defer c.s.wg.Done()
	var due replyHeap
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	bw := bufio.NewWriterSize(c.nc, bufferSize)
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
		written := 0
		for len(due) > 0 && !due[0].at.After(time.Now()) {
			r := heap.Pop(&due).(timedReply)
			var err error
			buf, err = wire.AppendMessage(buf[:0], r.id, r.msg)
			if err == nil {
				_, err = bw.Write(buf)
			}
			if err != nil {
				c.close()
				return
			}
			written++
		}
		if written > 0 {
			if err := bw.Flush(); err != nil {
				c.close()
				return
			}
			c.s.countReplies(written)
		}
	}
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

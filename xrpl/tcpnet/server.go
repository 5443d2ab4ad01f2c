package tcpnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
)

// ServerConfig configures a Server.
type ServerConfig struct {
	// Ledger is what the server serves, held in memory. It or Nodes is
	// required, not both.
	Ledger *ledger.Ledger
	// Nodes is what the server serves when it is not a Ledger in memory:
	// a node store on disk, say, which lets a peer serve a ledger larger
	// than its memory. Several servers may share one.
	Nodes Nodes
	// Behaviour is how it answers; the zero value is honest and immediate.
	Behaviour Behaviour
	// Seed seeds the behaviour's random choices.
	Seed uint64
	// MaxFrame caps the payload of a request's frame; 0 means
	// DefaultMaxRequestFrame. MaxItems caps the hashes of a request, as in
	// ConnConfig.
	MaxFrame, MaxItems int
	// Limits bounds what clients can make the server hold: connections,
	// idle and half-sent frames, replies waiting and being written.
	Limits ServerLimits

	// LimitsOff turns off the limits a rippled peer puts on what it is
	// sent, to compare with a server that has them (the default): it then
	// never cuts or refuses a connection for its charges, and never drops
	// a query because the connection's send queue is long. It still
	// charges and counts (ServerStats.Resources), as a peer that only
	// logged would.
	LimitsOff bool
	// Chatty makes the server talk as rippled does to every peer: on
	// connecting it sends a status change, manifests and endpoints, and
	// before each reply one more frame the client never asked for, going on
	// round the cycle status change, manifests, endpoints, ping (which asks
	// for a pong). A client must skip what it does not know.
	Chatty bool
}

// ServerStats counts what a Server did. Every count only grows.
type ServerStats struct {
	Accepted int // connections accepted
	Requests int // requests read on a connection still up (see plan)
	Replies  int // replies written
	Objects  int // objects in the replies written
	Refused  int // connections closed for a bad frame
	Drops    int // times Behaviour.DropAfter or DropAfterObjects took the server down
	Asked    int // objects the requests counted in Requests asked for

	// Rippled's accounts of each client address (see package resource):
	// the charges, the warnings, the connections cut for their charges
	// (Drops) and those refused on arrival while their balance was at the
	// drop threshold (Refused), and the highest balance reached.
	Resources resource.Stats
	// BusyDrops counts queries dropped unanswered because their
	// connection's send queue held resource.DropSendQueue replies or more.
	BusyDrops int
	// Truncated counts replies cut to resource.MaxReplyObjects objects.
	Truncated int
	// UnknownFrames counts frames of types the server does not decode,
	// skipped at no charge.
	UnknownFrames int
	// Useless counts unsolicited replies and pongs, each charged
	// resource.FeeUselessData.
	Useless int
	// Chatter counts the frames a Chatty server sent unprompted.
	Chatter int

	Rejected int // connections closed at once: over Limits.MaxConns or MaxConnsPerAddr
	// Evicted counts connections closed to make room, when the server was
	// full, for one from an address with fewer connections (see
	// ServerLimits.MaxConns).
	Evicted      int
	TimedOut     int // connections closed idle, mid-frame, or not taking a reply (Limits' timeouts)
	AcceptErrors int // Accept failures (out of file descriptors, say), each retried after a back-off

	// Behaviour.Service only; all zero without one.
	Served        int           // requests admitted to the queue (served at once or after waiting)
	Overflowed    int           // requests turned away by a full queue (dropped or rejected, as Service.Overflow says)
	QueueDelay    time.Duration // total time the served requests waited for a worker
	MaxQueueDelay time.Duration // the longest any of them waited
}

// Errors from a Server.
var (
	// ErrServerClosed: Listen after Close.
	ErrServerClosed = errors.New("tcpnet: server closed")
	// ErrListening: Listen while already listening.
	ErrListening = errors.New("tcpnet: server already listening")
)

// Server serves one ledger over TCP to every connection it accepts, answering
// each GetObjects as its Behaviour says and each Ping with a Pong. A frame
// that is malformed or oversized closes that connection; one of a type it
// does not decode is skipped, and an unsolicited reply or pong is charged,
// as rippled does.
//
// Like a rippled peer, by default, it keeps the accounts of each client
// address (package resource): every query and ping costs resource.FeeQuery
// (a query dropped for a long send queue, resource.FeeTrivial),
// a connection whose address's balance reaches resource.DropThreshold is
// cut, and a new one from that address is refused, and charged
// resource.FeeDrop, while the balance stays there; the accounts outlive the
// connections, and Kill. A query that arrives while its connection's send
// queue (replies planned and not yet written) holds resource.DropSendQueue
// replies is dropped unanswered, and a reply carries at most
// resource.MaxReplyObjects objects. ServerConfig.LimitsOff turns the cuts,
// refusals and drops off. It is safe for concurrent use. Create one with
// NewServer.
//
// A server can be killed (every connection dropped, no longer listening)
// and restarted on the same address, which is how a demo simulates a peer
// that crashes and comes back; a kill also empties its service queue. The
// zero Server is not usable.
//
// A Server runs on real time (time.Now and time.Timer), so inside a
// testing/synctest bubble it runs on the bubble's virtual time.
type Server struct {
	cfg        ServerConfig
	limits     ServerLimits  // cfg.Limits, defaults filled in
	quit       chan struct{} // closed by Close
	wg         sync.WaitGroup
	waiting    *budget // replies planned and not yet written, over all connections
	objects    *budget // the objects of those replies
	replyBytes *budget // encoded reply bytes being written, over all connections
	accounts   *resource.Accounts

	mu sync.Mutex
	// The following fields are guarded by mu.
	rng     *rand.Rand
	queue   *serviceQueue // nil without Behaviour.Service
	ln      net.Listener
	addr    string
	conns   map[*serverConn]struct{}
	byAddr  map[string]int // connections served now, by remote address
	connSeq uint64         // numbers the connections in their order of arrival
	closed  bool
	stats   ServerStats
}

// NewServer returns a server that is not listening yet. It fails if cfg has
// neither a Ledger nor Nodes, or both, a Behaviour that
// simnet.Profile.Validate rejects (impossible probabilities, a bad latency
// or service, a negative LateBy), or a negative limit.
func NewServer(cfg ServerConfig) (*Server, error) {
	switch {
	case cfg.Ledger == nil && cfg.Nodes == nil:
		return nil, errors.New("tcpnet: server needs a ledger or nodes to serve")
	case cfg.Ledger != nil && cfg.Nodes != nil:
		return nil, errors.New("tcpnet: server given both a ledger and nodes to serve: give one")
	case cfg.Ledger != nil:
		cfg.Nodes = cfg.Ledger
	}
	if err := cfg.Behaviour.validate(); err != nil {
		return nil, fmt.Errorf("tcpnet: %w", err)
	}
	limits, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("tcpnet: %w", err)
	}
	if cfg.MaxFrame <= 0 {
		cfg.MaxFrame = DefaultMaxRequestFrame
	}
	return &Server{
		cfg:        cfg,
		limits:     limits,
		quit:       make(chan struct{}),
		waiting:    newBudget(limits.MaxWaitingTotal),
		objects:    newBudget(limits.MaxWaitingObjects),
		replyBytes: newBudget(limits.MaxReplyBytes),
		accounts:   resource.NewAccounts(nil, !cfg.LimitsOff),
		rng:        rand.New(rand.NewPCG(cfg.Seed, 0x7463706e6574)), // "tcpnet"
		queue:      newServiceQueue(cfg.Behaviour.Service),
		conns:      make(map[*serverConn]struct{}),
		byAddr:     make(map[string]int),
	}, nil
}

// Listen starts accepting connections on addr ("127.0.0.1:0" picks a free
// port; Addr tells which). It fails with ErrServerClosed, ErrListening, or
// the listener's error.
func (s *Server) Listen(addr string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return ErrServerClosed
	case s.ln != nil:
		return ErrListening
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	s.serveListenerLocked(ln)
	return nil
}

// serveListenerLocked starts accepting on ln. The caller holds s.mu.
func (s *Server) serveListenerLocked(ln net.Listener) {
	s.ln, s.addr = ln, ln.Addr().String()
	s.wg.Add(1)
	go s.accept(ln)
}

// Addr returns the address the server listens on, or last listened on.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Resources = s.accounts.Stats()
	if s.queue != nil {
		s.queue.copyStats(&st)
	}
	return st
}

// Kill stops listening and drops every connection, as a crash would; the
// clients see their connections end, and the requests waiting for or in
// service are lost. Restart brings the server back. Kill does not wait for
// the connections' goroutines (Close does).
func (s *Server) Kill() {
	s.mu.Lock()
	ln := s.ln
	s.ln = nil
	conns := make([]*serverConn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	// Forgotten here, in the same step that empties the queue, so that a
	// request one of them is still reading cannot take a worker (see plan).
	clear(s.conns)
	clear(s.byAddr)
	if s.queue != nil {
		s.queue.reset()
	}
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, c := range conns {
		c.close()
	}
}

// Restart listens again on the address of the last Listen. It fails as
// Listen does.
func (s *Server) Restart() error { return s.Listen(s.Addr()) }

// Close kills the server for good and waits until every goroutine it started
// has returned. It is idempotent.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
	s.mu.Unlock()
	s.Kill()
	s.wg.Wait()
}

// accept serves the connections ln accepts until Kill or Close closes it.
// Any other Accept error (out of file descriptors, say) is counted and
// retried after a back-off, doubling from acceptBackoffMin to
// acceptBackoffMax, so the server comes back once the cause is gone.
func (s *Server) accept(ln net.Listener) {
	defer s.wg.Done()
	wait := time.Duration(0)
	for {
		nc, err := ln.Accept()
		s.mu.Lock()
		if s.ln != ln {
			s.mu.Unlock()
			if nc != nil {
				_ = nc.Close()
			}
			return // closed by Kill or Close
		}
		if err != nil {
			s.stats.AcceptErrors++
			s.mu.Unlock()
			wait = min(max(2*wait, acceptBackoffMin), acceptBackoffMax)
			if !s.pause(wait) {
				return
			}
			continue
		}
		wait = 0
		s.serveLocked(nc)
		s.mu.Unlock()
	}
}

// pause waits d, or less if the server closes; it reports whether it is
// still open.
func (s *Server) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.quit:
		return false
	}
}

// serveLocked starts serving an accepted connection, or closes it at once
// if it is over a connection limit (and returns nil). The caller holds s.mu.
func (s *Server) serveLocked(nc net.Conn) *serverConn {
	addr := remoteHost(nc)
	if s.byAddr[addr] >= s.limits.MaxConnsPerAddr ||
		len(s.conns) >= s.limits.MaxConns && !s.evictForLocked(addr) {
		s.stats.Rejected++
		_ = nc.Close()
		return nil
	}
	if !s.accounts.Admit(addr) {
		// Cut off for its charges: refused, and charged again
		// (ServerStats.Resources.Refused).
		_ = nc.Close()
		return nil
	}
	c := newServerConn(s, nc, addr)
	s.connSeq++
	c.seq = s.connSeq
	s.conns[c] = struct{}{}
	s.byAddr[addr]++
	s.stats.Accepted++
	s.wg.Add(2)
	go c.read()
	go c.respond()
	return c
}

// plan decides the replies to one request that c read, returns them with
// the moment they count from, and says whether the server must go down
// after it (Behaviour.DropAfter, DropAfterObjects). The moment is read under s.mu, so requests
// reach the service queue in the order of their times. A request read on a
// connection that Kill has already dropped gets no reply and is not counted:
// it never reached the server that is up now.
func (s *Server) plan(dst []reply, c *serverConn, id uint64, req ledger.GetObjects) ([]reply, time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if _, up := s.conns[c]; !up {
		return dst, now, false
	}
	s.stats.Requests++
	before := s.stats.Asked
	s.stats.Asked += len(req.Hashes)
	b := &s.cfg.Behaviour
	truncated := false
	dst = b.plan(dst, s.rng, s.cfg.Nodes, s.queue, now, id, req, &truncated)
	if truncated {
		s.stats.Truncated++
	}
	drop := b.DropAfter > 0 && s.stats.Requests%b.DropAfter == 0 ||
		b.DropAfterObjects > 0 && s.stats.Asked/b.DropAfterObjects > before/b.DropAfterObjects
	return dst, now, drop
}

// charge charges c's address fee and reports whether the connection must be
// cut for it.
func (s *Server) charge(c *serverConn, fee resource.Fee) bool {
	return s.accounts.Charge(c.addr, fee) == resource.Drop
}

// count adds one to the counter field picks, under s.mu.
func (s *Server) count(field func(*ServerStats) *int) {
	s.mu.Lock()
	*field(&s.stats)++
	s.mu.Unlock()
}

// drop takes the server down and, if Behaviour.DownFor is set, brings it
// back after that long.
func (s *Server) drop() {
	s.mu.Lock()
	s.stats.Drops++
	down := s.cfg.Behaviour.DownFor
	s.mu.Unlock()
	s.Kill()
	if down <= 0 {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(down)
		defer t.Stop()
		select {
		case <-t.C:
			_ = s.Restart() // fails only if closed meanwhile, or the port was taken
		case <-s.quit:
		}
	}()
}

// evictForLocked makes room, in a full server, for a connection from addr:
// it closes a connection of the address that has the most, if that address
// would still have more than addr once the newcomer is in, and stops
// counting it against the limits at once. So the clients of many addresses
// can fill the server only until a client of another address comes, and a
// client with one connection keeps it while any address has two. It reports
// whether it made room. Caller holds s.mu.
func (s *Server) evictForLocked(addr string) bool {
	busiest, most := "", 0
	for a, n := range s.byAddr {
		if n > most || n == most && a < busiest {
			busiest, most = a, n
		}
	}
	if most <= s.byAddr[addr]+1 {
		return false
	}
	var victim *serverConn
	for c := range s.conns {
		if c.addr == busiest && (victim == nil || c.seq > victim.seq) {
			victim = c // the newest: it has had the least of the server
		}
	}
	delete(s.conns, victim)
	if s.byAddr[busiest]--; s.byAddr[busiest] <= 0 {
		delete(s.byAddr, busiest)
	}
	victim.close()
	s.stats.Evicted++
	return true
}

// forget counts how c ended and stops counting it against the limits,
// unless Kill already has.
func (s *Server) forget(c *serverConn, why connEnd) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, up := s.conns[c]; up {
		delete(s.conns, c)
		if s.byAddr[c.addr]--; s.byAddr[c.addr] <= 0 {
			delete(s.byAddr, c.addr)
		}
	}
	switch why {
	case endRefused:
		s.stats.Refused++
	case endCharged: // counted in the accounts' Drops
	case endTimedOut:
		s.stats.TimedOut++
	}
}

// countTimedOut counts a connection closed for not taking a reply.
func (s *Server) countTimedOut() {
	s.mu.Lock()
	s.stats.TimedOut++
	s.mu.Unlock()
}

// held returns the bytes and replies the server holds now for its
// connections: encode buffers kept between replies, reply bytes being
// written, and replies waiting to be written.
func (s *Server) held() (encodeBuffers, replyBytes, waiting int) {
	s.mu.Lock()
	for c := range s.conns {
		encodeBuffers += int(c.encoded.Load())
	}
	s.mu.Unlock()
	return encodeBuffers, s.replyBytes.inUse(), s.waiting.inUse()
}

func (s *Server) countReplies(n, objects int) {
	s.mu.Lock()
	s.stats.Replies += n
	s.stats.Objects += objects
	s.mu.Unlock()
}

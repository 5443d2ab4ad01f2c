package tcpnet

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/wire"
)

// Tests of what a hostile client can make a Server do (ServerLimits). Each
// runs in a synctest bubble over net.Pipe, as the service tests do, so
// every timeout fires at its exact virtual moment and nothing sleeps.

func limitedServer(t *testing.T, b Behaviour, l ServerLimits) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{Ledger: testLedger, Behaviour: b, Seed: 1, Limits: l})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// addrConn is a pipe end that says it comes from addr.
type addrConn struct {
	net.Conn
	addr net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.addr }

// dialFrom hands s one end of a fresh pipe as if accepted from ip, and
// returns the other end and whether the server kept it.
func dialFrom(t *testing.T, s *Server, ip string) (net.Conn, bool) {
	t.Helper()
	near, far := net.Pipe()
	t.Cleanup(func() { _ = near.Close() })
	s.mu.Lock()
	c := s.serveLocked(addrConn{far, &net.TCPAddr{IP: net.ParseIP(ip), Port: 7}})
	s.mu.Unlock()
	return near, c != nil
}

// pingPong sends a ping on nc and reports whether its pong comes back.
func pingPong(nc net.Conn, id uint64) bool {
	frame, _ := wire.AppendMessage(nil, id, wire.Ping{})
	if _, err := nc.Write(frame); err != nil {
		return false
	}
	f, err := wire.ReadFrame(nc, 0)
	if err != nil {
		return false
	}
	got, msg, err := wire.DecodeMessage(f, 0)
	return err == nil && got == id && msg == wire.Pong{}
}

// ended reports whether the server has closed nc: a read returns EOF.
func ended(nc net.Conn) bool {
	_, err := nc.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)
}

// TestServerReleasesLargeReplyBuffer: a connection that was sent a large
// reply does not keep the buffer it was encoded in. (Before: the encode
// buffer kept the largest reply's size for the connection's life, 4 MB for
// one 18 KB query.)
func TestServerReleasesLargeReplyBuffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := limitedServer(t, Behaviour{}, ServerLimits{})
		defer s.Close()
		c := connectPipe(t, s, time.Now())
		small := c.send(1, 1)
		checkHonest(t, small, c.next().msg)
		synctest.Wait()
		if enc, _, _ := s.held(); enc == 0 || enc > keepEncodeBuffer {
			t.Fatalf("after a small reply the connection holds a %d-byte encode buffer, want it kept, at most %d", enc, keepEncodeBuffer)
		}
		// The root (an inner node) asked for 2,000 times: a reply of
		// about a megabyte.
		req := ledger.GetObjects{}
		for range 2000 {
			req.Hashes = append(req.Hashes, testLedger.Root())
		}
		c.write(2, req)
		if size := wire.MessageSize(2, c.next().msg); size < 4*keepEncodeBuffer {
			t.Fatalf("reply of %d bytes: too small to show anything", size)
		}
		synctest.Wait()
		enc, bytes, waiting := s.held()
		if enc > keepEncodeBuffer || bytes != 0 || waiting != 0 {
			t.Fatalf("after a large reply: encode buffers %d bytes (want at most %d), reply bytes %d, waiting %d (want 0)", enc, keepEncodeBuffer, bytes, waiting)
		}
	})
}

// TestServerConnectionLimits: connections beyond the cap per address, or in
// total, are closed at once and counted; one from another address is
// served, in a full server by taking the place of the newest connection of
// the address holding the most (while it holds more than one), and the cap
// frees up when a connection leaves.
func TestServerConnectionLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := limitedServer(t, Behaviour{}, ServerLimits{MaxConns: 3, MaxConnsPerAddr: 2})
		defer s.Close()
		a1, ok1 := dialFrom(t, s, "10.0.0.1")
		a2, ok2 := dialFrom(t, s, "10.0.0.1")
		a3, ok3 := dialFrom(t, s, "10.0.0.1")
		if !ok1 || !ok2 || ok3 {
			t.Fatalf("three from one address: kept %v %v %v, want the third closed", ok1, ok2, ok3)
		}
		if !ended(a3) {
			t.Fatal("the rejected connection is still open")
		}
		b, okB := dialFrom(t, s, "10.0.0.2")
		if !okB || !pingPong(b, 9) {
			t.Fatal("a connection from another address is not served")
		}
		// Full, with 10.0.0.1 holding two: a newcomer from 10.0.0.3 takes
		// the place of 10.0.0.1's newest connection.
		c, okC := dialFrom(t, s, "10.0.0.3")
		if !okC || !pingPong(c, 11) {
			t.Fatal("a full server with an address holding two refused a third address")
		}
		if !ended(a2) || !pingPong(a1, 12) {
			t.Fatal("the eviction did not take 10.0.0.1's newest connection, and it alone")
		}
		// Now every address holds one: a fourth address is refused.
		if d, okD := dialFrom(t, s, "10.0.0.4"); okD || !ended(d) {
			t.Fatal("a fourth connection in all was kept, over MaxConns 3, with no address holding more than one")
		}
		_ = a1.Close()
		synctest.Wait() // the server sees a1 leave
		a4, ok4 := dialFrom(t, s, "10.0.0.1")
		if !ok4 || !pingPong(a4, 10) {
			t.Fatal("after one left, a new connection from its address is not served")
		}
		if st := s.Stats(); st.Rejected != 2 || st.Evicted != 1 || st.Accepted != 5 {
			t.Errorf("stats %+v, want 2 rejected, 1 evicted, 5 accepted", st)
		}
	})
}

// TestServerIdleTimeout: a connection on which no frame begins for
// IdleTimeout is closed at that moment; one that keeps talking is not.
func TestServerIdleTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := limitedServer(t, Behaviour{}, ServerLimits{IdleTimeout: time.Second})
		defer s.Close()
		start := time.Now()
		idle, _ := dialFrom(t, s, "10.0.0.1")
		busy, _ := dialFrom(t, s, "10.0.0.2")
		done := make(chan time.Duration)
		go func() {
			ended(idle)
			done <- time.Since(start)
		}()
		for i := range 4 { // every 600ms, past the idle connection's end
			elapse(600 * ms) // virtual time: the bubble's clock
			if !pingPong(busy, uint64(i)) {
				t.Fatalf("ping %d on the busy connection at %v: no pong", i, time.Since(start))
			}
		}
		if d := <-done; d != time.Second {
			t.Fatalf("idle connection closed after %v, want 1s", d)
		}
		if st := s.Stats(); st.TimedOut != 1 {
			t.Errorf("stats %+v, want 1 timed out", st)
		}
	})
}

// TestServerFrameTimeout: a frame begun and not finished (the slowloris
// client) closes the connection FrameTimeout after its first byte, even
// though bytes keep coming.
func TestServerFrameTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := limitedServer(t, Behaviour{}, ServerLimits{IdleTimeout: time.Hour, FrameTimeout: 2 * time.Second})
		defer s.Close()
		nc, _ := dialFrom(t, s, "10.0.0.1")
		frame, _ := wire.AppendMessage(nil, 1, ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}})
		start := time.Now()
		for _, b := range frame {
			if _, err := nc.Write([]byte{b}); err != nil {
				break // closed by the server
			}
			elapse(500 * ms)
		}
		if d := time.Since(start); d > 2*time.Second+500*ms {
			t.Fatalf("the server read a frame sent a byte every 500ms for %v, want it cut at 2s", d)
		}
		if !ended(nc) {
			t.Fatal("the connection is still open")
		}
		synctest.Wait() // the reader closes the connection before it counts the time-out
		if st := s.Stats(); st.TimedOut != 1 || st.Requests != 0 {
			t.Errorf("stats %+v, want 1 timed out, no request", st)
		}
	})
}

// TestServerWaitingBounded: clients that send requests faster than their
// replies fall due, and never read, get at most MaxWaiting replies planned
// per connection and MaxWaitingTotal in all; their connections close at
// WriteTimeout, and an honest client is served throughout. (Before: every
// request read was planned, and the replies waiting grew without bound.)
func TestServerWaitingBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const latency = time.Second
		s := limitedServer(t, Behaviour{Latency: simnet.Fixed(latency)},
			ServerLimits{MaxWaiting: 4, MaxWaitingTotal: 6, WriteTimeout: 3 * time.Second})
		defer s.Close()
		req, _ := wire.AppendMessage(nil, 1, ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}})
		for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
			nc, _ := dialFrom(t, s, ip)
			go func() {
				for range 100 {
					if _, err := nc.Write(req); err != nil {
						return // closed by the server
					}
				}
			}()
		}
		synctest.Wait() // both flooders blocked: the server stopped reading them
		if _, _, waiting := s.held(); waiting != 6 {
			t.Fatalf("%d replies waiting, want 6 (MaxWaitingTotal)", waiting)
		}
		if st := s.Stats(); st.Requests != 8 {
			t.Fatalf("%d requests read, want 8: 6 waiting, one in each reader's hand, the rest in the flooders' sockets", st.Requests)
		}
		// An honest client waits for room, is served once the flooders'
		// connections time out, and its pings skip nothing.
		honest := connectPipe(t, s, time.Now())
		want := honest.send(7, 1)
		a := honest.next()
		checkHonest(t, want, a.msg)
		if a.id != 7 || a.at > latency+3*time.Second+latency {
			t.Fatalf("honest reply %v, want 7 within the flooders' write timeout and its latency", a)
		}
		synctest.Wait()
		st := s.Stats()
		if st.TimedOut != 2 || s.waiting.peak() > 6 {
			t.Errorf("stats %+v, peak waiting %d: want both flooders timed out, at most 6 waiting", st, s.waiting.peak())
		}
		if _, bytes, waiting := s.held(); bytes != 0 || waiting != 0 {
			t.Errorf("after the flooders left: %d reply bytes, %d waiting, want none", bytes, waiting)
		}
	})
}

// TestServerWaitingObjectsBounded: replies of many objects waiting for
// their delay are bounded by their objects, not only by their number: two
// clients flooding queries of 300 objects each, with room for 100 replies,
// get at most MaxWaitingObjects (1,000) objects' worth planned, and the
// server reads no more of them until those are written. (Before: 100
// such replies, 30,000 objects' lists, could wait at once; with the
// default caps, 512 replies of 4,096 objects, 118 MB.)
func TestServerWaitingObjectsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const latency = time.Second
		s := limitedServer(t, Behaviour{Latency: simnet.Fixed(latency)},
			ServerLimits{MaxWaiting: 100, MaxWaitingTotal: 100, MaxWaitingObjects: 1000, WriteTimeout: 3 * time.Second})
		defer s.Close()
		var hashes []ledger.Hash
		for h := range testLedger.Hashes() {
			if len(hashes) == 300 {
				break
			}
			hashes = append(hashes, h)
		}
		req, _ := wire.AppendMessage(nil, 1, ledger.GetObjects{Hashes: hashes})
		for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
			nc, _ := dialFrom(t, s, ip)
			go func() {
				for range 50 {
					if _, err := nc.Write(req); err != nil {
						return // closed by the server
					}
				}
			}()
		}
		synctest.Wait() // both flooders blocked: the server stopped reading them
		if objects := s.objects.inUse(); objects > 1000 || objects < 700 {
			t.Fatalf("%d objects waiting, want at most 1,000 (MaxWaitingObjects) and no room for another 300", objects)
		}
		elapse(10 * time.Second) // the flooders never read: their connections time out
		synctest.Wait()
		if objects, peak := s.objects.inUse(), s.objects.peak(); objects != 0 || peak > 1000 {
			t.Fatalf("after the flooders left: %d objects waiting, peak %d; want none, at most 1,000", objects, peak)
		}
	})
}

// fakeListener accepts what the test hands it: an error or a connection.
type fakeListener struct {
	next   chan acceptResult
	closed chan struct{}
}

type acceptResult struct {
	nc  net.Conn
	err error
}

func (l *fakeListener) Accept() (net.Conn, error) {
	select {
	case r := <-l.next:
		return r.nc, r.err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *fakeListener) Close() error {
	close(l.closed)
	return nil
}

func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7001} }

// TestServerAcceptRetries: Accept failing for want of file descriptors
// does not stop the server: it counts each failure, backs off, and serves
// the connections that come after. (Before: the first failed Accept ended
// the accept loop for good.)
func TestServerAcceptRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := limitedServer(t, Behaviour{}, ServerLimits{})
		defer s.Close()
		ln := &fakeListener{next: make(chan acceptResult), closed: make(chan struct{})}
		s.mu.Lock()
		s.serveListenerLocked(ln)
		s.mu.Unlock()
		emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
		start := time.Now()
		for range 10 {
			ln.next <- acceptResult{err: emfile}
		}
		near, far := net.Pipe()
		defer near.Close()
		ln.next <- acceptResult{nc: far}
		// 5+10+20+...+640ms, then 1s twice: the back-off doubles to its cap.
		if d, want := time.Since(start), 3275*ms; d != want {
			t.Errorf("the 11th Accept came after %v, want %v", d, want)
		}
		if !pingPong(near, 3) {
			t.Fatal("the connection accepted after the errors is not served")
		}
		if st := s.Stats(); st.AcceptErrors != 10 || st.Accepted != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

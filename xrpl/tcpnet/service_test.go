package tcpnet

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/wire"
)

// Tests of Behaviour.Service. Each runs a Server inside a testing/synctest
// bubble, its connections over net.Pipe (which blocks durably, as loopback
// TCP does not), so the server's timers run on the bubble's virtual time and
// every reply's arrival time is exact.

// answer is one reply a pipeClient read: under which ID, what, and when,
// since the test began.
type answer struct {
	id  uint64
	msg any
	at  time.Duration
}

func (a answer) String() string { return fmt.Sprintf("%d@%v", a.id, a.at) }

// pipeClient is one connection to a Server under test.
type pipeClient struct {
	t       *testing.T
	nc      net.Conn
	start   time.Time
	answers chan answer // closed when the server ends the connection
}

// connectPipe hands the server one end of a fresh pipe, as if it had
// accepted it, and returns a client on the other that reads every reply.
func connectPipe(t *testing.T, s *Server, start time.Time) *pipeClient {
	t.Helper()
	near, far := net.Pipe()
	s.mu.Lock()
	s.serveLocked(far)
	s.mu.Unlock()
	c := &pipeClient{t: t, nc: near, start: start, answers: make(chan answer, 256)}
	t.Cleanup(func() { _ = near.Close() })
	go c.read()
	return c
}

func (c *pipeClient) read() {
	defer close(c.answers)
	br := bufio.NewReader(c.nc)
	for {
		f, err := wire.ReadFrame(br, 0)
		if err != nil {
			return
		}
		id, msg, err := wire.DecodeMessage(f, 0)
		if err != nil {
			c.t.Errorf("reply %d: %v", id, err)
			return
		}
		c.answers <- answer{id, msg, time.Since(c.start)}
	}
}

// send writes request id for k objects of the test ledger, and returns it.
func (c *pipeClient) send(id uint64, k int) ledger.GetObjects {
	c.t.Helper()
	req := ledger.GetObjects{}
	for h := range testLedger.Hashes() {
		if len(req.Hashes) == k {
			break
		}
		req.Hashes = append(req.Hashes, h)
	}
	c.write(id, req)
	return req
}

func (c *pipeClient) write(id uint64, msg any) {
	c.t.Helper()
	frame, err := wire.AppendMessage(nil, id, msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.nc.Write(frame); err != nil {
		c.t.Fatalf("writing %d: %v", id, err)
	}
}

// next waits (on virtual time) for the next reply.
func (c *pipeClient) next() answer {
	c.t.Helper()
	a, ok := <-c.answers
	if !ok {
		c.t.Fatal("the server ended the connection")
	}
	return a
}

// nextN returns the next n replies, as "id@time".
func (c *pipeClient) nextN(n int) []string {
	c.t.Helper()
	var got []string
	for range n {
		got = append(got, c.next().String())
	}
	return got
}

// rest returns the replies that came before the server ended the
// connection.
func (c *pipeClient) rest() []string {
	var got []string
	for a := range c.answers {
		got = append(got, a.String())
	}
	return got
}

// noReplyWithin fails the test if a reply comes, or the server ends the
// connection, within d of the bubble's clock.
func (c *pipeClient) noReplyWithin(d time.Duration) {
	c.t.Helper()
	select {
	case a, ok := <-c.answers:
		if !ok {
			c.t.Fatal("the server ended the connection")
		}
		c.t.Fatalf("reply %s, want none within %v", a, d)
	case <-time.After(d):
	}
}

func serviceServer(t *testing.T, b Behaviour) *Server {
	t.Helper()
	s, err := NewServer(ServerConfig{Ledger: testLedger, Behaviour: b, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func checkHonest(t *testing.T, req ledger.GetObjects, msg any) {
	t.Helper()
	resp, ok := msg.(ledger.Objects)
	if !ok || len(resp.Items) != len(req.Hashes) {
		t.Fatalf("reply %T with %+v, want all %d objects", msg, msg, len(req.Hashes))
	}
	for i, it := range resp.Items {
		if it.Hash != req.Hashes[i] || !ledger.Verify(it.Hash, it.Data) {
			t.Fatalf("item %d is not object %s", i, req.Hashes[i])
		}
	}
}

// TestServiceFIFO: one worker serves three requests read at once one after
// the other, so each answer comes one service time after the previous.
func TestServiceFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{Latency: simnet.Fixed(5 * ms), Service: simnet.Service{Workers: 1, PerRequest: 10 * ms}})
		defer s.Close()
		c := connectPipe(t, s, time.Now())
		reqs := map[uint64]ledger.GetObjects{}
		for id := uint64(1); id <= 3; id++ {
			reqs[id] = c.send(id, 2)
		}
		var got []string
		for range 3 {
			a := c.next()
			checkHonest(t, reqs[a.id], a.msg)
			got = append(got, a.String())
		}
		if want := []string{"1@15ms", "2@25ms", "3@35ms"}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v: 10ms of service each, one at a time, then 5ms of latency", got, want)
		}
		synctest.Wait() // the responder counts its replies after the client has read them
		st := s.Stats()
		if st.Requests != 3 || st.Served != 3 || st.Overflowed != 0 || st.QueueDelay != 30*ms || st.MaxQueueDelay != 20*ms || st.Replies != 3 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceWorkers: N workers serve N requests at once; service time
// grows with the objects asked for.
func TestServiceWorkers(t *testing.T) {
	for _, c := range []struct {
		name    string
		service simnet.Service
		objects []int // per request, in order
		want    []string
	}{
		{"three workers, four requests", simnet.Service{Workers: 3, PerRequest: 10 * ms}, []int{1, 1, 1, 1},
			[]string{"1@10ms", "2@10ms", "3@10ms", "4@20ms"}},
		{"per object", simnet.Service{Workers: 2, PerObject: 2 * ms}, []int{1, 3, 2}, // A 0–2, B 0–6, A 2–6
			[]string{"1@2ms", "2@6ms", "3@6ms"}},
		{"unlimited", simnet.Service{}, []int{1, 5, 9},
			[]string{"1@0s", "2@0s", "3@0s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := serviceServer(t, Behaviour{Service: c.service})
				defer s.Close()
				p := connectPipe(t, s, time.Now())
				for i, k := range c.objects {
					p.send(uint64(i+1), k)
				}
				if got := p.nextN(len(c.want)); !slices.Equal(got, c.want) {
					t.Fatalf("answers %v, want %v", got, c.want)
				}
			})
		})
	}
}

// TestServiceSharedByConnections: the capacity is the server's, so a
// request on a second connection waits behind one on the first.
func TestServiceSharedByConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{Service: simnet.Service{Workers: 1, PerRequest: 10 * ms}})
		defer s.Close()
		start := time.Now()
		a, b := connectPipe(t, s, start), connectPipe(t, s, start)
		a.send(1, 1)
		synctest.Wait() // read and queued: the connections' readers race otherwise
		b.send(2, 1)
		if got := a.next().String(); got != "1@10ms" {
			t.Errorf("first connection: %s", got)
		}
		if got := b.next().String(); got != "2@20ms" {
			t.Errorf("second connection: %s, want 2@20ms: it waited for the one worker", got)
		}
	})
}

// TestServiceOverflowDrops: requests that find the queue full are never
// answered, and counted.
func TestServiceOverflowDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{Service: simnet.Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1}})
		c := connectPipe(t, s, time.Now())
		for id := uint64(1); id <= 4; id++ {
			c.send(id, 1) // 1 is served, 2 waits, 3 and 4 find the queue full
		}
		got := c.nextN(1)
		c.send(5, 1) // at 10ms 2 started: room again
		got = append(got, c.nextN(2)...)
		c.noReplyWithin(DefaultIdleTimeout / 2) // 3 and 4 were dropped: never answered (within the idle timeout, which then closes the connection)
		s.Close()
		got = append(got, c.rest()...)
		if want := []string{"1@10ms", "2@20ms", "5@30ms"}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		st := s.Stats()
		if st.Requests != 5 || st.Served != 3 || st.Overflowed != 2 || st.Replies != 3 || st.QueueDelay != 20*ms || st.MaxQueueDelay != 10*ms {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceOverflowRejects: requests that find the queue full are
// answered after the latency alone with no objects, and counted.
func TestServiceOverflowRejects(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{
			Latency: simnet.Fixed(5 * ms),
			Service: simnet.Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1, Overflow: simnet.OverflowReject},
		})
		defer s.Close()
		c := connectPipe(t, s, time.Now())
		reqs := map[uint64]ledger.GetObjects{}
		for id := uint64(1); id <= 4; id++ {
			reqs[id] = c.send(id, 3)
		}
		var got []string
		for range 4 {
			a := c.next()
			got = append(got, a.String())
			if a.id >= 3 {
				if resp, ok := a.msg.(ledger.Objects); !ok || len(resp.Items) != 0 {
					t.Errorf("rejection of %d: %T %+v, want a reply with no objects", a.id, a.msg, a.msg)
				}
			} else {
				checkHonest(t, reqs[a.id], a.msg)
			}
		}
		if want := []string{"3@5ms", "4@5ms", "1@15ms", "2@25ms"}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		synctest.Wait()
		if st := s.Stats(); st.Served != 2 || st.Overflowed != 2 || st.Replies != 4 || st.QueueDelay != 10*ms {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceKillEmptiesQueue: a kill loses the requests waiting for or in
// service, and frees the workers: a request that comes afterwards is served
// at once. Nothing is left running (synctest.Test fails if a goroutine of
// the bubble outlives it; goleak checks the rest).
func TestServiceKillEmptiesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{Service: simnet.Service{Workers: 1, PerRequest: 10 * ms}})
		defer s.Close()
		start := time.Now()
		a := connectPipe(t, s, start)
		for id := uint64(1); id <= 3; id++ {
			a.send(id, 1)
		}
		synctest.Wait() // all three read: one in service, two waiting
		if st := s.Stats(); st.Served != 3 || st.QueueDelay != 30*ms {
			t.Fatalf("before the kill: %+v", st)
		}
		s.Kill()
		if got := a.rest(); len(got) != 0 {
			t.Fatalf("answers after a kill: %v", got)
		}
		b := connectPipe(t, s, start)
		b.send(4, 1)
		if got := b.next().String(); got != "4@10ms" {
			t.Fatalf("after the kill: %s, want 4@10ms: served at once", got)
		}
		synctest.Wait()
		if st := s.Stats(); st.Served != 4 || st.QueueDelay != 30*ms || st.MaxQueueDelay != 20*ms || st.Replies != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceCloseWhileQueued: Close with requests waiting answers none of
// them and returns with every goroutine of the server gone.
func TestServiceCloseWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{Latency: simnet.Fixed(ms), Service: simnet.Service{Workers: 2, PerRequest: time.Second}})
		c := connectPipe(t, s, time.Now())
		for id := uint64(1); id <= 10; id++ {
			c.send(id, 1)
		}
		got := c.nextN(2) // now two are answered, two in service, six waiting
		s.Close()
		if got = append(got, c.rest()...); !slices.Equal(got, []string{"1@1.001s", "2@1.001s"}) {
			t.Fatalf("answers %v", got)
		}
		synctest.Wait()
		if st := s.Stats(); st.Served != 10 || st.Replies != 2 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServicePingsSkipTheQueue: a ping is answered at once, even with every
// worker busy.
func TestServicePingsSkipTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := serviceServer(t, Behaviour{Service: simnet.Service{Workers: 1, PerRequest: 10 * ms}})
		defer s.Close()
		c := connectPipe(t, s, time.Now())
		c.send(1, 1)
		c.write(2, wire.Ping{})
		if got := c.nextN(2); !slices.Equal(got, []string{"2@0s", "1@10ms"}) {
			t.Fatalf("answers %v", got)
		}
	})
}

func TestServiceValidated(t *testing.T) {
	for name, svc := range map[string]simnet.Service{
		"times without workers": {PerRequest: ms},
		"negative workers":      {Workers: -1},
		"negative queue limit":  {Workers: 1, QueueLimit: -1},
		"unknown overflow":      {Workers: 1, Overflow: 7},
	} {
		if _, err := NewServer(ServerConfig{Ledger: testLedger, Behaviour: Behaviour{Service: svc}}); !errors.Is(err, simnet.ErrBadProfile) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestServiceKillRefusesLateReads: a request that a killed connection's
// reader was still decoding when the kill came takes no worker of the
// server that is up after it.
func TestServiceKillRefusesLateReads(t *testing.T) {
	s := serviceServer(t, Behaviour{Service: simnet.Service{Workers: 1, PerRequest: 10 * ms}})
	defer s.Close()
	near, far := net.Pipe()
	defer near.Close()
	s.mu.Lock()
	c := s.serveLocked(far)
	s.mu.Unlock()
	s.Kill()
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	if replies, _, drop := s.plan(nil, c, 1, req); len(replies) != 0 || drop {
		t.Fatalf("a request read after the kill was planned: %+v", replies)
	}
	if st := s.Stats(); st.Requests != 0 || st.Served != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRepliesBeyondTheReplyBytesGoInBatches: with MaxReplyBytes 2,000 and
// four replies of about 500 to 1,300 bytes due at once, the connection
// writes what fits, then the rest: all four come at the moment they are
// due. (Before: the batch took room reply by reply and gave it back only
// once written, so the reply that did not fit waited for the batch's own
// bytes and nothing was written until the connection's idle timeout.)
func TestRepliesBeyondTheReplyBytesGoInBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := NewServer(ServerConfig{Ledger: testLedger, Seed: 1, Behaviour: Behaviour{Latency: simnet.Fixed(300 * time.Millisecond)},
			Limits: ServerLimits{MaxReplyBytes: 2000}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		c := connectPipe(t, s, time.Now())
		total := 0
		for id := range uint64(4) {
			req := c.send(id+1, 3+int(id))
			total += wire.MessageSize(id+1, testLedger.Answer(req))
		}
		if total <= 2000 {
			t.Fatalf("the replies come to %d bytes: not past the cap, the test tests nothing", total)
		}
		if got := c.nextN(4); !slices.Equal(got, []string{"1@300ms", "2@300ms", "3@300ms", "4@300ms"}) {
			t.Fatalf("replies %v, want all four at 300ms", got)
		}
		if peak := s.replyBytes.peak(); peak > 2000 {
			t.Fatalf("%d reply bytes held at once, above the cap of 2,000", peak)
		}
	})
}

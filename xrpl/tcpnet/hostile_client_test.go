package tcpnet

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/penalty"
	"github.com/peersched/peersched/xrpl/wire"
)

// Tests of what a hostile peer can make a Conn or Client do. Each runs in a
// synctest bubble over net.Pipe, so deadlines and back-offs are exact and
// nothing sleeps.

// quietHost takes every peer and every response, and can be told to refuse
// deliveries under some IDs.
type quietHost struct {
	mu      sync.Mutex
	refuse  map[peer.RequestID]error
	got     int
	connect chan peer.ID
}

func (h *quietHost) Connect(p peer.Peer, _ int) error {
	if h.connect != nil {
		h.connect <- p.ID()
	}
	return nil
}
func (h *quietHost) Disconnect(peer.ID) error { return nil }
func (h *quietHost) Deliver(_ peer.ID, id peer.RequestID, _ any) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.refuse[id]; err != nil {
		return err
	}
	h.got++
	return nil
}

// pipeConn returns a started Conn over a pipe, and the pipe's far end.
func pipeConn(t *testing.T, host Host, cfg ConnConfig) (*Conn, net.Conn) {
	t.Helper()
	near, far := net.Pipe()
	c := NewConn(near, "p", host, cfg)
	c.Start()
	t.Cleanup(func() {
		_ = c.Close()
		_ = far.Close()
	})
	return c, far
}

// drain reads and discards everything on nc until it ends.
func drain(nc net.Conn) {
	buf := make([]byte, 4096)
	for {
		if _, err := nc.Read(buf); err != nil {
			return
		}
	}
}

// TestAnswerTimeout: a peer asked something that sends nothing for
// AnswerTimeout, or takes longer over one frame, is dropped at that moment
// with ReasonIdle; a peer asked nothing may stay silent. (Before: such a
// peer stayed connected for the whole fetch.)
func TestAnswerTimeout(t *testing.T) {
	const timeout = 5 * time.Second
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	t.Run("never answers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, far := pipeConn(t, &quietHost{}, ConnConfig{AnswerTimeout: timeout})
			go drain(far)
			elapse(time.Minute) // asked nothing: stays up
			if c.Err() != nil {
				t.Fatalf("a peer asked nothing was dropped: %v", c.Err())
			}
			start := time.Now()
			if err := c.Send(1<<24, req); err != nil {
				t.Fatal(err)
			}
			<-c.Done()
			if d := time.Since(start); d != timeout || ReasonOf(c.Err()) != ReasonIdle {
				t.Fatalf("ended after %v with %v, want %v and %q", d, c.Err(), timeout, ReasonIdle)
			}
		})
	})
	t.Run("answers, then stops", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, far := pipeConn(t, &quietHost{}, ConnConfig{AnswerTimeout: timeout})
			answer, _ := wire.AppendMessage(nil, 1<<24, testLedger.Answer(req))
			go func() {
				_, _ = wire.ReadFrame(far, 0)
				_, _ = wire.ReadFrame(far, 0)
				elapse(3 * time.Second)
				_, _ = far.Write(answer) // the first, 3s late: fine
				drain(far)
			}()
			start := time.Now()
			for id := range 2 {
				if err := c.Send(peer.RequestID(1<<24+id), req); err != nil {
					t.Fatal(err)
				}
			}
			<-c.Done()
			if d := time.Since(start); d != 3*time.Second+timeout || ReasonOf(c.Err()) != ReasonIdle {
				t.Fatalf("ended after %v with %v, want %v (5s after its one answer) and %q", d, c.Err(), 3*time.Second+timeout, ReasonIdle)
			}
		})
	})
	t.Run("slowloris frame", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			c, far := pipeConn(t, &quietHost{}, ConnConfig{AnswerTimeout: timeout})
			answer, _ := wire.AppendMessage(nil, 1<<24, testLedger.Answer(req))
			writerDone := make(chan struct{})
			go func() {
				defer close(writerDone)
				for _, b := range answer { // unasked, a byte a second
					if _, err := far.Write([]byte{b}); err != nil {
						return
					}
					elapse(time.Second)
				}
			}()
			start := time.Now()
			<-c.Done()
			d := time.Since(start)
			// The writer may be asleep between two bytes: close its end and
			// wait for it, so that the bubble ends with no goroutine left.
			far.Close()
			<-writerDone
			if d != timeout || ReasonOf(c.Err()) != ReasonIdle {
				t.Fatalf("ended after %v with %v, want %v and %q", d, c.Err(), timeout, ReasonIdle)
			}
		})
	})
}

// TestTrafficCounted: every frame delivered under a request ID is reported
// with its size and the Host's verdict, taken or refused.
func TestTrafficCounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		type seen struct {
			bytes int
			err   error
		}
		var mu sync.Mutex
		var got []seen
		host := &quietHost{refuse: map[peer.RequestID]error{2: receiver.ErrLateResponse, 3: receiver.ErrDuplicateResponse}}
		c, far := pipeConn(t, host, ConnConfig{Traffic: func(from peer.ID, bytes int, err error) {
			mu.Lock()
			defer mu.Unlock()
			if from != "p" {
				t.Errorf("traffic from %q", from)
			}
			got = append(got, seen{bytes, err})
		}})
		resp := testLedger.Answer(ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}})
		var want []seen
		for id, err := range []error{nil, nil, receiver.ErrLateResponse, receiver.ErrDuplicateResponse} {
			if id == 0 {
				continue
			}
			frame, _ := wire.AppendMessage(nil, uint64(id), resp)
			if _, err := far.Write(frame); err != nil {
				t.Fatal(err)
			}
			want = append(want, seen{len(frame), err})
		}
		ping, _ := wire.AppendMessage(nil, 9, wire.Ping{})
		go drain(far)
		_, _ = far.Write(ping) // not traffic under a request ID
		_ = c.Close()
		mu.Lock()
		defer mu.Unlock()
		if !slices.EqualFunc(got, want, func(a, b seen) bool { return a.bytes == b.bytes && errors.Is(a.err, b.err) }) {
			t.Fatalf("traffic %+v, want %+v", got, want)
		}
	})
}

// redials runs a Client against a peer that sends an oversized frame on
// every connection, and returns when each of its first n dials came (on
// the bubble's clock) and why each connection ended.
func redials(t *testing.T, seed uint64, n int) ([]time.Duration, []Reason) {
	return redialsTo(t, seed, n, func(far net.Conn) {
		_, _ = far.Write(binary.BigEndian.AppendUint32(nil, 1<<25)) // a frame over the cap
		drain(far)
	})
}

// redialsTo is redials against a peer that does serve on each connection
// before the connection ends (serve returns, and its end is closed).
func redialsTo(t *testing.T, seed uint64, n int, serve func(far net.Conn)) ([]time.Duration, []Reason) {
	var at []time.Duration
	var why []Reason
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		dialled := make(chan struct{})
		var once sync.Once
		c := NewClient(&quietHost{}, ClientConfig{
			Seed:      seed,
			RedialMin: 50 * time.Millisecond, RedialMax: 2 * time.Second,
			Dial: func(ctx context.Context, _ string) (net.Conn, error) {
				near, far := net.Pipe()
				mu.Lock()
				at = append(at, time.Since(start))
				if len(at) == n {
					once.Do(func() { close(dialled) })
				}
				mu.Unlock()
				go func() {
					defer far.Close()
					serve(far)
				}()
				return near, nil
			},
			Ended: func(_ peer.ID, err error) {
				mu.Lock()
				why = append(why, ReasonOf(err))
				mu.Unlock()
			},
		})
		c.Add("bad", "pipe")
		<-dialled
		c.Close()
	})
	return at[:n], why[:n-1]
}

// TestRedialAfterUsefulConnection: a peer that serves an answer the host
// takes, then closes the connection (a peer restarting, as under -chaos),
// is redialled within RedialMin each time, however often it does so; one
// that serves an answer and then breaks the protocol still backs off.
// (Before: every connection shorter than RedialReset doubled the wait, so
// a peer restarting every few seconds was soon redialled only every
// RedialMax, and a fetch from such peers stalled.)
func TestRedialAfterUsefulConnection(t *testing.T) {
	const n = 9
	answer, _ := wire.AppendMessage(nil, 7, testLedger.Answer(ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}))
	at, why := redialsTo(t, 1, n, func(far net.Conn) {
		_, _ = far.Write(answer) // taken by the host, then the peer goes
	})
	for i := 1; i < n; i++ {
		if gap := at[i] - at[i-1]; gap > 50*time.Millisecond {
			t.Errorf("redial %d came %v after the one before, want within RedialMin (50ms)", i, gap)
		}
	}
	for i, r := range why {
		if r != ReasonPeerClosed {
			t.Errorf("connection %d ended for %q, want %q", i, r, ReasonPeerClosed)
		}
	}
	at, _ = redialsTo(t, 1, n, func(far net.Conn) {
		_, _ = far.Write(answer)
		_, _ = far.Write(binary.BigEndian.AppendUint32(nil, 1<<25)) // then a frame over the cap
		drain(far)
	})
	if last := at[n-1] - at[n-2]; last < penalty.Backoff(50*time.Millisecond, 2*time.Second, n-1)/2 {
		t.Errorf("a peer that answers, then breaks the protocol, was redialled %v after the one before: want the back-off", last)
	}
}

// TestRedialBacksOff: a peer that breaks the protocol on every connection
// is redialled after waits that double up to RedialMax, each jittered down
// by up to half, the same for the same seed; the Client names why each
// connection ended. (Before: it was redialled every RedialMin, 50ms, for
// ever.)
func TestRedialBacksOff(t *testing.T) {
	const n = 9
	at, why := redials(t, 1, n)
	for i := 1; i < n; i++ {
		gap := at[i] - at[i-1]
		full := penalty.Backoff(50*time.Millisecond, 2*time.Second, i)
		if gap < full/2 || gap > full {
			t.Errorf("redial %d came %v after the one before, want within [%v, %v]", i, gap, full/2, full)
		}
	}
	for i, r := range why {
		if r != ReasonOversized {
			t.Errorf("connection %d ended for %q, want %q", i, r, ReasonOversized)
		}
	}
	if again, _ := redials(t, 1, n); !slices.Equal(at, again) {
		t.Errorf("seed 1 twice: %v and %v", at, again)
	}
	if other, _ := redials(t, 2, n); slices.Equal(at, other) {
		t.Errorf("seeds 1 and 2 gave the same waits: %v", at)
	}
}

// TestAnswerBeforeSendReturns: a peer that answers a query, or a ping,
// before Send has returned (the frame written, answered and read while
// Send's goroutine was still on its way out) has answered: it is not
// dropped as idle AnswerTimeout later, and its pong is not unsolicited.
// (Before: Send counted the question only after queuing it, so an answer
// that fast was counted first; the injected hook makes it that fast.)
func TestAnswerBeforeSendReturns(t *testing.T) {
	const timeout = 5 * time.Second
	req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
	for _, c := range []struct {
		name    string
		id      peer.RequestID
		message any
		answer  any
	}{
		{"query", 1 << 24, req, testLedger.Answer(req)},
		{"ping", 7, wire.Ping{}, wire.Pong{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var mu sync.Mutex
				var unsolicited int
				host := &quietHost{}
				conn, far := pipeConn(t, host, ConnConfig{AnswerTimeout: timeout, Traffic: func(_ peer.ID, _ int, err error) {
					mu.Lock()
					defer mu.Unlock()
					if errors.Is(err, ErrUnsolicited) {
						unsolicited++
					}
				}})
				answer, _ := wire.AppendMessage(nil, uint64(c.id), c.answer)
				go func() {
					_, _ = wire.ReadFrame(far, 0)
					_, _ = far.Write(answer)
					drain(far)
				}()
				sendQueued = synctest.Wait // the peer answers before Send returns
				defer func() { sendQueued = nil }()
				if err := conn.Send(c.id, c.message); err != nil {
					t.Fatal(err)
				}
				sendQueued = nil
				elapse(2 * timeout)
				if err := conn.Err(); err != nil {
					t.Fatalf("dropped after answering: %v", err)
				}
				mu.Lock()
				defer mu.Unlock()
				if unsolicited != 0 {
					t.Fatalf("%d pongs taken as unsolicited", unsolicited)
				}
			})
		})
	}
}

// TestRefusedSendIsNotAsked: a query Send refuses (the queue full) is not
// one the peer owes an answer: once the peer has answered the queries
// that went out, it is not dropped as idle.
func TestRefusedSendIsNotAsked(t *testing.T) {
	const timeout = 5 * time.Second
	synctest.Test(t, func(t *testing.T) {
		req := ledger.GetObjects{Hashes: []ledger.Hash{testLedger.Root()}}
		conn, far := pipeConn(t, &quietHost{}, ConnConfig{AnswerTimeout: timeout, QueueLen: 1})
		if err := conn.Send(1<<24, req); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the writer holds the first, blocked on the pipe
		if err := conn.Send(1<<24+1, req); err != nil {
			t.Fatal(err)
		}
		if err := conn.Send(1<<24+2, req); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("third Send: %v, want ErrQueueFull", err)
		}
		go func() {
			for id := range uint64(2) {
				_, _ = wire.ReadFrame(far, 0)
				answer, _ := wire.AppendMessage(nil, 1<<24+id, testLedger.Answer(req))
				_, _ = far.Write(answer)
			}
			drain(far)
		}()
		elapse(2 * timeout)
		if err := conn.Err(); err != nil {
			t.Fatalf("dropped with both sent queries answered: %v", err)
		}
	})
}

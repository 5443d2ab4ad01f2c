package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// wire stands in for the host's connections: Send queues a message as a real
// connection would, and the example plays the network by reading what was
// sent and handing responses back with Deliver.
type wire struct {
	id  peer.ID
	mu  sync.Mutex
	out []outbound
}

type outbound struct {
	requestID peer.RequestID
	message   any
}

func (w *wire) ID() peer.ID { return w.id }

func (w *wire) Send(requestID peer.RequestID, message any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.out = append(w.out, outbound{requestID, message})
	return nil
}

// take returns and forgets what was sent so far.
func (w *wire) take() []outbound {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.out
	w.out = nil
	return out
}

// senderFunc adapts a function to a Sender that is never discarded here.
type senderFunc func(offer.Offer)

func (f senderFunc) OnOffer(o offer.Offer) { f(o) }
func (f senderFunc) OnDiscard()            {}

// A request's round trip: schedule a sender, send a request through its
// offer, and get the response in the receiver. Callbacks run on the
// scheduler's own goroutine, so the example waits for them on channels, as a
// component would.
func Example() {
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	alice := &wire{id: "alice"}
	if err := s.Connect(alice, 2); err != nil {
		panic(err)
	}

	sent := make(chan struct{})
	answered := make(chan string)
	print := receiver.Funcs{
		Response: func(id peer.RequestID, from peer.ID, response any) {
			answered <- fmt.Sprintf("%s answered: %v", from, response)
		},
	}
	_, err = s.Schedule(senderFunc(func(o offer.Offer) {
		c, _ := o.Channel(0)
		fmt.Printf("offered %d channels, may use %d; sending to %s\n", o.Len(), o.Size(), c.Peer)
		if _, err := o.Request(0, "GET /ledger/42", print, 5*time.Second); err != nil {
			fmt.Println("send failed:", err)
		}
		close(sent)
	}), 0)
	if err != nil {
		panic(err)
	}

	// The network answers what was sent.
	<-sent
	for _, m := range alice.take() {
		_ = s.Deliver("alice", m.requestID, fmt.Sprintf("ledger 42 (asked %q)", m.message))
	}
	fmt.Println(<-answered)
	// Output:
	// offered 2 channels, may use 2; sending to alice
	// alice answered: ledger 42 (asked "GET /ledger/42")
}

// retrier asks for one object and, when a request fails, asks again of a
// peer other than the one that failed, which it tells the scheduler to
// avoid: every offer it gets then leads elsewhere.
type retrier struct {
	s    *scheduler.Scheduler
	sent chan peer.ID // each send, so the example knows when a try is out
	done chan string
}

func (r *retrier) OnOffer(o offer.Offer) {
	c, _ := o.Channel(0)
	if _, err := o.Request(0, "object #7", r, time.Second); err != nil {
		fmt.Println("send failed:", err)
		return
	}
	r.sent <- c.Peer
}

func (r *retrier) OnDiscard() { r.done <- "discarded" }

func (r *retrier) OnResponse(_ peer.RequestID, from peer.ID, response any) {
	r.done <- fmt.Sprintf("%v from %s", response, from)
}

func (r *retrier) OnFailure(_ peer.RequestID, from peer.ID, reason receiver.Reason) {
	fmt.Printf("request to %s failed: %v; retrying elsewhere\n", from, reason)
	if _, err := r.s.ScheduleWith(r, 0, offer.Options{Avoid: []peer.ID{from}}); err != nil {
		r.done <- err.Error()
	}
}

// A receiver that retries on failure on a different peer, which it asks
// for with offer.Options.Avoid. The mock clock makes the timeout happen on
// demand.
func Example_retry() {
	mock := clock.NewMock()
	s, err := scheduler.New(scheduler.Config{Clock: mock})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	silent, steady := &wire{id: "a-silent"}, &wire{id: "b-steady"}
	_ = s.Connect(silent, 1)

	r := &retrier{s: s, sent: make(chan peer.ID, 2), done: make(chan string, 1)}
	_, _ = s.Schedule(r, 0)
	// a-silent, the only peer so far, never answers.
	fmt.Println("first try went to", <-r.sent)
	_ = s.Connect(steady, 1)

	mock.Add(time.Second) // the deadline passes; the receiver retries
	fmt.Println("second try went to", <-r.sent)
	retried := steady.take()
	_ = s.Deliver("b-steady", retried[0].requestID, "the object")
	fmt.Println(<-r.done)
	// Output:
	// first try went to a-silent
	// request to a-silent failed: timeout; retrying elsewhere
	// second try went to b-steady
	// the object from b-steady
}

// bulk is the seed's "remote job" pattern: a sender with many messages sends
// as many as each offer allows and, while messages remain, schedules a
// continuation to wait for more channels.
type bulk struct {
	s       *scheduler.Scheduler
	pending []string
	answers *receiver.Funcs
}

func (b *bulk) OnOffer(o offer.Offer) {
	for i := range o.All() {
		if o.Remaining() == 0 || len(b.pending) == 0 {
			break
		}
		if _, err := o.Request(i, b.pending[0], b.answers, time.Minute); err == nil {
			b.pending = b.pending[1:]
		}
	}
	if len(b.pending) > 0 {
		if _, err := b.s.Schedule(b, 0); err != nil {
			fmt.Println("cannot continue:", err)
		}
	}
}

func (b *bulk) OnDiscard() {}

// A bulk download of ten objects over two peers with two channels each, as a
// simulation would run it: on a mock clock, which keeps response times (and
// so the choice of peers) the same on every run, with a fixed RankSeed, which
// keeps the order of equally good peers the same, and with inline callbacks,
// which finish before the call that caused them returns, so the same steps
// always interleave the same way and no lock guards the counts.
func Example_bulk() {
	s, _ := scheduler.New(scheduler.Config{Clock: clock.NewMock(), InlineCallbacks: true, RankSeed: 1})
	defer s.Shutdown(context.Background())
	peers := []*wire{{id: "p1"}, {id: "p2"}}
	for _, p := range peers {
		_ = s.Connect(p, 2)
	}
	perPeer := map[peer.ID]int{}
	received := 0
	answers := &receiver.Funcs{Response: func(_ peer.RequestID, from peer.ID, _ any) {
		perPeer[from]++
		received++
	}}
	job := &bulk{s: s, answers: answers}
	for i := range 10 {
		job.pending = append(job.pending, fmt.Sprintf("object %d", i))
	}
	_, _ = s.Schedule(job, 0)

	// Play the network: answer whatever was sent until the job is done. p1 is
	// answered first each round, so its channels reopen first and it serves more.
	for received < 10 {
		for _, p := range peers {
			for _, m := range p.take() {
				_ = s.Deliver(p.id, m.requestID, "data for "+m.message.(string))
			}
		}
	}
	ids := make([]string, 0, len(perPeer))
	for id := range perPeer {
		ids = append(ids, string(id))
	}
	sort.Strings(ids)
	for _, id := range ids {
		fmt.Printf("%s served %d\n", id, perPeer[peer.ID(id)])
	}
	fmt.Println("in flight:", s.Stats().RequestsInFlight)
	// Output:
	// p1 served 6
	// p2 served 4
	// in flight: 0
}

// A sender with nothing to send declines its offer and is parked: it keeps
// its place, but however many channels open it is not called again until
// it asks, with Reoffer, once it has work. So a thousand idle senders cost
// nothing when a channel opens.
func Example_reoffer() {
	s, _ := scheduler.New(scheduler.Config{Clock: clock.NewMock(), InlineCallbacks: true, RankSeed: 1})
	defer s.Shutdown(context.Background())
	_ = s.Connect(&wire{id: "p1"}, 4)

	var jobs []string
	ticket, _ := s.Schedule(senderFunc(func(o offer.Offer) {
		if len(jobs) == 0 {
			fmt.Println("offered channels, nothing to send")
			return
		}
		if _, err := o.Request(0, jobs[0], receiver.Funcs{}, time.Minute); err == nil {
			fmt.Println("sent", jobs[0])
			jobs = jobs[1:]
		}
	}), 0)
	fmt.Println("parked:", s.Stats().SendersParked)
	_ = s.Connect(&wire{id: "p2"}, 4) // new channels: a parked sender is not called

	jobs = append(jobs, "job 1")
	fmt.Println("asked again:", s.Reoffer(ticket))
	fmt.Println("waiting:", s.Stats().SendersWaiting)
	// Output:
	// offered channels, nothing to send
	// parked: 1
	// sent job 1
	// asked again: true
	// waiting: 0
}

// ledgerReply is the message a peer answers a ledger request with.
type ledgerReply struct{ seq int }

// A request declares the type of response it expects: a response of any
// other type is refused at Deliver with receiver.ErrWrongResponseType and
// counted, and the request stays live until its right response comes. Here
// a confused peer first answers with an error string.
func ExampleScheduler_Deliver_expectedType() {
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	alice := &wire{id: "alice"}
	if err := s.Connect(alice, 1); err != nil {
		panic(err)
	}

	sent := make(chan struct{})
	answered := make(chan string)
	print := receiver.Funcs{
		Response: func(id peer.RequestID, from peer.ID, response any) {
			answered <- fmt.Sprintf("%s answered ledger %d", from, response.(*ledgerReply).seq)
		},
	}
	_, err = s.Schedule(senderFunc(func(o offer.Offer) {
		_, err := o.Send(0, offer.Request{
			Message:  "GET /ledger/42",
			Receiver: print,
			Timeout:  5 * time.Second,
			Expect:   reflect.TypeFor[*ledgerReply](),
		})
		if err != nil {
			fmt.Println("send failed:", err)
		}
		close(sent)
	}), 0)
	if err != nil {
		panic(err)
	}

	<-sent
	m := alice.take()[0]
	err = s.Deliver("alice", m.requestID, "no such ledger")
	fmt.Println(err, errors.Is(err, receiver.ErrWrongResponseType))
	fmt.Println("dropped for their type:", s.Stats().WrongType)
	_ = s.Deliver("alice", m.requestID, &ledgerReply{seq: 42})
	fmt.Println(<-answered)
	// Output:
	// peersched: response of the wrong type true
	// dropped for their type: 1
	// alice answered ledger 42
}

// echoPeer answers every request from a goroutine of its own, as a
// connection's read loop would: with an echo, or, for "busy", a refusal.
type echoPeer struct {
	id peer.ID
	s  *scheduler.Scheduler
	wg sync.WaitGroup
}

func (p *echoPeer) ID() peer.ID { return p.id }

func (p *echoPeer) Send(requestID peer.RequestID, message any) error {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if message == "busy" {
			_ = p.s.Refuse(p.id, requestID)
			return
		}
		_ = p.s.Deliver(p.id, requestID, fmt.Sprintf("echo: %v", message))
	}()
	return nil
}

// Call sends one request and waits for its outcome, under a context: the
// common case of a component with a single question. A failure is an error
// that errors.Is matches with its reason; a context that ends first
// withdraws the request.
func ExampleScheduler_Call() {
	s, err := scheduler.New(scheduler.Config{})
	if err != nil {
		panic(err)
	}
	alice := &echoPeer{id: "alice", s: s}
	defer func() {
		alice.wg.Wait()
		_ = s.Shutdown(context.Background())
	}()
	if err := s.Connect(alice, 2); err != nil {
		panic(err)
	}

	// The request's timeout is the time ctx has left when it is sent.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	from, response, err := s.Call(ctx, 0, "hello", scheduler.CallOptions{Expect: reflect.TypeFor[string]()})
	fmt.Println(from, response, err)

	_, _, err = s.Call(ctx, 0, "busy", scheduler.CallOptions{Timeout: time.Second})
	fmt.Println(err, errors.Is(err, receiver.Refused), errors.Is(err, context.DeadlineExceeded))
	// Output:
	// alice echo: hello <nil>
	// peersched: call to "alice": refused true false
}

// Per-peer counters and response times: alice answers one request after
// 3ms, bob lets one time out. A mock clock and inline callbacks make the
// times exact and every callback finish within the call that caused it.
func ExampleScheduler_PeerStats() {
	mock := clock.NewMock()
	s, err := scheduler.New(scheduler.Config{Clock: mock, InlineCallbacks: true})
	if err != nil {
		panic(err)
	}
	defer s.Shutdown(context.Background())
	alice, bob := &wire{id: "alice"}, &wire{id: "bob"}
	for _, w := range []*wire{alice, bob} {
		if err := s.Connect(w, 1); err != nil {
			panic(err)
		}
	}
	// One sender takes both channels: a request to each.
	_, err = s.Schedule(senderFunc(func(o offer.Offer) {
		for i := range o.Len() {
			o.Request(i, "ping", receiver.Funcs{}, time.Second)
		}
	}), 0)
	if err != nil {
		panic(err)
	}
	mock.Add(3 * time.Millisecond)
	s.Deliver("alice", alice.take()[0].requestID, "pong")
	// bob answers after his request's deadline: it has timed out (the
	// deadline is enforced before the response is looked at), and the
	// response is dropped as late.
	mock.Add(time.Second)
	err = s.Deliver("bob", bob.take()[0].requestID, "pong")
	fmt.Println(err)

	bounds := scheduler.HistogramBounds()
	for _, ps := range s.PeerStats(nil) {
		h := ps.ResponseTimes
		fmt.Printf("%s: sent %d, answered %d, timed out %d, late %d; answered within %v: %d, in all %v\n",
			ps.ID, ps.Sent, ps.Succeeded, ps.TimedOut, ps.Late, bounds[6], h.Cumulative[6], h.Sum)
	}
	// Output:
	// peersched: late response
	// alice: sent 1, answered 1, timed out 0, late 0; answered within 4ms: 1, in all 3ms
	// bob: sent 1, answered 0, timed out 1, late 1; answered within 4ms: 0, in all 0s
}

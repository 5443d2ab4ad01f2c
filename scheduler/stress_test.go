package scheduler

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/internal/lockorder"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

var stressSeed = flag.Uint64("stress.seed", 0, "seed for TestStress (0: a new one each run)")

// Stress sizes. The lock-order build checks every lock operation (several
// microseconds each), so it runs a quarter of the operations: enough to mix
// every path under the checker, in a few seconds.
const (
	stressWorkers = 8
	stressPeers   = 12
)

func stressOps() int64 {
	if lockorder.Enabled {
		return 25_000
	}
	return 100_000
}

// TestStress drives one scheduler from eight goroutines at once, on the real
// clock inside a synctest bubble (so time is virtual and timers race for
// real: a response and its deadline often fall on the same instant). Peers
// connect and disconnect, senders of random priorities come and go, every
// kind of callback calls back in, hosts refuse, panic and answer early, late,
// twice or from the wrong peer, and the scheduler is stopped at a random
// moment (from a worker or from inside a callback). At the end every sender
// has left exactly once, every request sent has had exactly one outcome
// unless it was withdrawn, the counters agree with what the receivers saw,
// the channels balance, and no goroutine is left.
func TestStress(t *testing.T) {
	seed := *stressSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("TestStress failed with seed %d; rerun with -run '^TestStress$' -stress.seed=%d", seed, seed)
		}
	})
	synctest.Test(t, func(t *testing.T) { runStress(t, seed) })
}

// stressWorld is what the workers and callbacks share.
type stressWorld struct {
	s         *Scheduler
	clk       clock.Clock
	target    int64
	ops       atomic.Int64 // public calls made so far, from anywhere
	stopAt    int64
	stopAsked atomic.Bool // the random moment has come
	stopIn    atomic.Bool // the next callback of stopKind stops the scheduler
	stopKind  int         // where Stop is called: by a worker, or in which callback
	waiting   atomic.Int64

	mu         sync.Mutex // guards the fields below
	senders    []*stressSender
	tickets    []offer.Ticket
	requests   map[peer.RequestID]*stressReceiver
	recent     []peer.RequestID
	deadline   map[peer.RequestID]time.Time // for each request sent, when it is due
	accepted   map[peer.RequestID]bool      // requests whose response Deliver accepted
	violations []string
	lateOffers int // offers made to a sender after its withdrawal returned
}

func (w *stressWorld) op() { w.ops.Add(1) }

func (w *stressWorld) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) < 20 {
		w.violations = append(w.violations, fmt.Sprintf(format, args...))
	}
}

func peerID(i int) peer.ID { return peer.ID(fmt.Sprintf("n%d", i)) }

func runStress(t *testing.T, seed uint64) {
	root := rand.New(rand.NewPCG(seed, 0))
	logs := &recordingHandler{}
	clk := clock.New() // inside the bubble: virtual time
	// Odd seeds run callbacks inline, even ones on the scheduler's goroutine.
	inline := seed%2 == 1
	t.Logf("seed %d: inline callbacks %v", seed, inline)
	s, err := New(Config{Clock: clk, Logger: logs.logger(), MaxSenders: 5000, InlineCallbacks: inline})
	if err != nil {
		t.Fatal(err)
	}
	// Answers queue on answersMu on machines with many processors; half
	// the seeds take that path here whatever this machine has.
	s.queueAnswers = seed%4 >= 2
	t.Logf("seed %d: answers queue first %v", seed, s.queueAnswers)
	w := &stressWorld{s: s, clk: clk, target: stressOps(),
		requests: map[peer.RequestID]*stressReceiver{}, deadline: map[peer.RequestID]time.Time{},
		accepted: map[peer.RequestID]bool{}}
	w.stopAt = w.target * int64(60+root.IntN(35)) / 100
	w.stopKind = root.IntN(len(stopPlaces))

	var wg sync.WaitGroup
	for i := range stressWorkers {
		r := rand.New(rand.NewPCG(seed, uint64(i+1)))
		wg.Go(func() { w.work(r) })
	}
	wg.Wait()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	synctest.Wait()

	// Responses still travelling (timers the bubble never reaches) would
	// only be refused with ErrStopped: nothing waits for them.
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) > 0 {
		t.Fatalf("seed %d: %d violations, the first:\n%s", seed, len(w.violations), w.violations[0])
	}
	st := s.Stats()
	var responses, timeouts, disconnects, shutdowns uint64
	for id, r := range w.requests {
		want := int32(1)
		if r.withdrawn.Load() {
			want = 0
		}
		if got := r.outcomes.Load(); got != want {
			t.Fatalf("seed %d: request %#x (withdrawn: %v): %d outcomes", seed, uint64(id), r.withdrawn.Load(), got)
		}
		if w.accepted[id] && want == 1 && r.last.Load() != 1 {
			t.Fatalf("seed %d: request %#x: Deliver accepted its response, its receiver got outcome %d", seed, uint64(id), r.last.Load())
		}
		switch r.last.Load() {
		case 1:
			responses++
		case 2:
			timeouts++
		case 3:
			disconnects++
		case 4:
			shutdowns++
		}
	}
	for i, snd := range w.senders {
		if got := snd.exits.Load(); got != 1 {
			t.Fatalf("seed %d: sender %d left %d times", seed, i, got)
		}
	}
	if st.Succeeded != responses || st.TimedOut != timeouts || st.Disconnected != disconnects || st.Shutdown != shutdowns {
		t.Fatalf("seed %d: Stats %+v, receivers saw %d responses, %d timeouts, %d disconnects, %d shutdowns",
			seed, st, responses, timeouts, disconnects, shutdowns)
	}
	if ended := st.Succeeded + st.TimedOut + st.Disconnected + st.Shutdown + st.WithdrawnEnded; ended != st.Sent || uint64(len(w.requests)) != st.Sent {
		t.Fatalf("seed %d: %d requests sent (%d seen by the senders), %d ended: %+v", seed, st.Sent, len(w.requests), ended, st)
	}
	if !st.Stopped || st.ChannelsClosed != 0 || st.RequestsInFlight != 0 || st.SendersWaiting != 0 {
		t.Fatalf("seed %d: after Stop: %+v", seed, st)
	}
	checkBalanced(t, s)
	if n := logs.count("peersched: recovered a panic in user code"); uint64(n) != st.PanicsHandled {
		t.Fatalf("seed %d: %d panics handled, %d logged", seed, st.PanicsHandled, n)
	}
	t.Logf("seed %d: %d operations by %d goroutines and their callbacks; %d senders, %d requests (%d answered, %d timed out, %d disconnected, %d shut down, %d withdrawn), %d notifications, %d send errors, %d panics, %d late, %d duplicate, %d wrong-peer, %d unknown responses; %d offers reached a sender after its withdrawal (all expired); stopped %s",
		seed, w.ops.Load(), stressWorkers, len(w.senders), st.Sent, st.Succeeded, st.TimedOut, st.Disconnected, st.Shutdown, st.WithdrawnEnded,
		st.Notified, st.SendErrors, st.PanicsHandled, st.Late, st.Duplicate, st.WrongPeer, st.Unknown, w.lateOffers,
		stopPlaces[w.stopKind])
}

// work is one worker's loop: random public calls until the total is reached.
func (w *stressWorld) work(r *rand.Rand) {
	for w.ops.Load() < w.target {
		if w.ops.Load() >= w.stopAt && w.stopAsked.CompareAndSwap(false, true) {
			if w.stopKind == stopByWorker {
				w.op()
				w.s.Stop()
			} else {
				w.stopIn.Store(true)
			}
		}
		switch k := r.IntN(100); {
		case k < 12:
			w.op()
			p := &stressPeer{w: w, id: peerID(r.IntN(stressPeers)), r: rand.New(rand.NewPCG(r.Uint64(), 0))}
			_ = w.s.Connect(p, 1+r.IntN(4))
		case k < 18:
			w.op()
			_ = w.s.Disconnect(peerID(r.IntN(stressPeers)))
		case k < 55:
			w.schedule(r.Uint64(), r.IntN(4))
		case k < 62:
			w.withdrawSender(r)
		case k < 69:
			w.withdrawReceiver(r)
		case k < 74:
			w.op()
			_ = w.s.Deliver(peerID(r.IntN(stressPeers)), peer.RequestID(r.Uint64()), "forged")
		case k < 78:
			w.op()
			st := w.s.Stats()
			if st.ChannelsOpen < 0 || st.ChannelsClosed < 0 {
				w.violate("Stats: %+v", st)
			}
			w.op()
			// Every peer here has a fixed count: open and closed add up
			// to it, and never more are closed.
			for _, u := range w.s.PeerUsage(nil) {
				if u.ChannelsOpen+u.ChannelsClosed != u.Limit || u.ChannelsOpen < 0 {
					w.violate("peer %s: %+v", u.ID, u)
				}
			}
		default:
			// Let virtual time pass: it moves only when every goroutine
			// in the bubble waits, so responses and deadlines race.
			<-w.clk.After(time.Duration(r.IntN(1500)) * time.Microsecond)
		}
	}
}

func (w *stressWorld) schedule(seed uint64, priority int) {
	if w.waiting.Load() > 2000 {
		return // keep the queue to a size where offers stay cheap
	}
	snd := &stressSender{w: w, r: rand.New(rand.NewPCG(seed, 1))}
	w.op()
	w.waiting.Add(1)
	t, err := w.s.Schedule(snd, priority)
	if err != nil {
		w.waiting.Add(-1)
		return
	}
	w.mu.Lock()
	snd.ticket = t
	w.senders = append(w.senders, snd)
	w.tickets = append(w.tickets, t)
	w.mu.Unlock()
}

func (w *stressWorld) withdrawSender(r *rand.Rand) {
	w.mu.Lock()
	var snd *stressSender
	if n := len(w.senders); n > 0 {
		snd = w.senders[n-1-r.IntN(min(n, 64))]
	}
	w.mu.Unlock()
	if snd == nil {
		return
	}
	w.op()
	// WithdrawSender never waits for user code, so holding exitMu over it
	// cannot deadlock.
	snd.exitMu.Lock()
	if w.s.WithdrawSender(snd.ticket) {
		snd.withdrawn.Store(true)
		snd.exit(w, "withdrawn")
	}
	snd.exitMu.Unlock()
}

func (w *stressWorld) withdrawReceiver(r *rand.Rand) {
	w.mu.Lock()
	var id peer.RequestID
	if n := len(w.recent); n > 0 {
		id = w.recent[r.IntN(n)]
	}
	w.mu.Unlock()
	w.op()
	if w.s.WithdrawReceiver(id) {
		w.mu.Lock()
		rcv := w.requests[id]
		w.mu.Unlock()
		if rcv == nil {
			w.violate("withdrew %#x, which no sender saw sent", uint64(id))
			return
		}
		if rcv.outcomes.Load() > 0 {
			w.violate("withdrew %#x after its outcome", uint64(id))
		}
		rcv.withdrawn.Store(true)
	}
}

// Where the scheduler is stopped: by a worker, or from inside the first
// callback of a kind that runs after the random moment.
const (
	stopByWorker   = iota
	stopInOffer    // the offered sender has not sent: it must be discarded
	stopInReceiver // other outcomes are still queued
	stopInHostSend // just after the host answered early: the answer must win
)

var stopPlaces = [...]string{"by a worker", "in a sender's offer", "in a receiver", "in a host's send, after an early answer"}

// stopHere reports whether this callback, of kind, is where Stop comes.
func (w *stressWorld) stopHere(kind int) bool {
	return w.stopKind == kind && w.stopIn.CompareAndSwap(true, false)
}

func (w *stressWorld) stop() {
	w.op()
	w.s.Stop()
}

// callBack makes one random public call from inside a callback.
func (w *stressWorld) callBack(r *rand.Rand) {
	switch r.IntN(6) {
	case 0:
		w.schedule(r.Uint64(), r.IntN(4))
	case 1:
		w.op()
		_ = w.s.Disconnect(peerID(r.IntN(stressPeers)))
	case 2:
		w.op()
		_ = w.s.Connect(&stressPeer{w: w, id: peerID(r.IntN(stressPeers)), r: rand.New(rand.NewPCG(r.Uint64(), 0))}, 1+r.IntN(3))
	case 3:
		w.withdrawSender(r)
	case 4:
		w.withdrawReceiver(r)
	case 5:
		w.op()
		_ = w.s.Stats()
	}
}

type stressSender struct {
	w         *stressWorld
	r         *rand.Rand // used only in this sender's callbacks, which never overlap
	ticket    offer.Ticket
	exits     atomic.Int32
	withdrawn atomic.Bool
	// exitMu makes a successful withdrawal and its record one step, as seen
	// by the end of OnOffer, which decides whether a send was the exit.
	exitMu sync.Mutex
}

func (s *stressSender) exit(w *stressWorld, how string) {
	if s.exits.Add(1) > 1 {
		w.violate("a sender left twice, the second time %s", how)
	}
	w.waiting.Add(-1)
}

// stressMessage is what a request carries to its host: the timeout, so the
// host can tell when the request is due.
type stressMessage struct{ timeout time.Duration }

var stressTimeouts = [...]time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond}

// checkNotWithdrawnBefore flags a send that succeeded although it began
// after the sender's withdrawal had returned: the withdrawal expires the
// offer, so such a send must fail. (One begun before may succeed.)
func (s *stressSender) checkNotWithdrawnBefore(w *stressWorld, withdrawnBefore bool) {
	if withdrawnBefore {
		w.violate("a sender sent through its offer after its withdrawal returned")
	}
}

func (s *stressSender) OnOffer(o offer.Offer) {
	w, r := s.w, s.r
	if w.stopHere(stopInOffer) {
		w.stop() // from now on every send fails: this sender is discarded
	}
	if s.exits.Load() > 0 {
		if !s.withdrawn.Load() || o.Status().Live {
			w.violate("a sender that left (withdrawn: %v) was offered %+v", s.withdrawn.Load(), o.Status())
		}
		// Withdrawn just as the drainer picked it: the offer has expired.
		w.mu.Lock()
		w.lateOffers++
		w.mu.Unlock()
	}
	sent := false
	switch k := r.IntN(100); {
	case k < 10: // decline
	case k < 15:
		w.op()
		withdrawnBefore := s.withdrawn.Load()
		if o.Notify(r.IntN(max(o.Len(), 1)), stressMessage{}, time.Duration(1+r.IntN(1000))*time.Microsecond) == nil {
			sent = true
			s.checkNotWithdrawnBefore(w, withdrawnBefore)
		}
	default:
		for n := 1 + r.IntN(max(o.Size(), 1)); n > 0; n-- {
			rcv := &stressReceiver{w: w, r: rand.New(rand.NewPCG(r.Uint64(), 2))}
			timeout := stressTimeouts[r.IntN(len(stressTimeouts))]
			w.op()
			withdrawnBefore := s.withdrawn.Load()
			id, err := o.Request(r.IntN(max(o.Len(), 1)), stressMessage{timeout}, rcv, timeout)
			if err != nil {
				continue
			}
			sent = true
			s.checkNotWithdrawnBefore(w, withdrawnBefore)
			rcv.id = id
			w.mu.Lock()
			w.requests[id] = rcv
			w.recent = append(w.recent, id)
			if len(w.recent) > 256 {
				w.recent = w.recent[128:]
			}
			w.mu.Unlock()
		}
	}
	// A withdrawal that came while a send was in the host's hands was the
	// sender's exit, even if that send then succeeded.
	s.exitMu.Lock()
	if sent && !s.withdrawn.Load() {
		s.exit(w, "sent")
	}
	s.exitMu.Unlock()
	if r.IntN(20) == 0 {
		w.callBack(r)
	}
	if r.IntN(200) == 0 {
		panic("stress: sender exploded")
	}
}

func (s *stressSender) OnDiscard() {
	w := s.w
	s.exit(w, "discarded")
	if s.withdrawn.Load() {
		w.violate("a withdrawn sender was discarded")
	}
	if s.r.IntN(10) == 0 {
		w.callBack(s.r) // refused: the scheduler is stopping
	}
}

type stressReceiver struct {
	w         *stressWorld
	r         *rand.Rand
	id        peer.RequestID
	outcomes  atomic.Int32
	last      atomic.Int32 // 1 response, 2 timeout, 3 disconnected, 4 shutdown
	withdrawn atomic.Bool
}

func (rc *stressReceiver) outcome(id peer.RequestID, kind int32) {
	w := rc.w
	if rc.outcomes.Add(1) > 1 {
		w.violate("%#x: a second outcome", uint64(id))
	}
	if rc.withdrawn.Load() {
		w.violate("%#x: an outcome after its withdrawal", uint64(id))
	}
	rc.last.Store(kind)
	if w.stopHere(stopInReceiver) {
		w.stop()
	}
	switch k := rc.r.IntN(100); {
	case k < 8: // a retry
		w.schedule(rc.r.Uint64(), rc.r.IntN(4))
	case k < 12:
		w.callBack(rc.r)
	case k == 12:
		panic("stress: receiver exploded")
	}
}

func (rc *stressReceiver) OnResponse(id peer.RequestID, from peer.ID, response any) {
	if want := fmt.Sprintf("answer to %#x", uint64(id)); response != want {
		rc.w.violate("%#x got %v", uint64(id), response)
	}
	rc.outcome(id, 1)
}

func (rc *stressReceiver) OnFailure(id peer.RequestID, from peer.ID, reason receiver.Reason) {
	rc.outcome(id, int32(reason)+1)
}

// stressPeer is a host connection that answers through the network: after a
// delay near the request's timeout, sometimes exactly on it, sometimes not
// at all, sometimes twice or from the wrong peer; and sometimes refuses,
// panics or answers before its send returns.
type stressPeer struct {
	w  *stressWorld
	id peer.ID
	r  *rand.Rand // used only in Send, which the drainer calls one at a time
}

func (p *stressPeer) ID() peer.ID { return p.id }

func (p *stressPeer) Send(requestID peer.RequestID, message any) error {
	w, r := p.w, p.r
	k := r.IntN(100)
	stopping := requestID != 0 && w.stopHere(stopInHostSend)
	switch {
	case stopping:
	case k < 3:
		return errRefused
	case k == 3:
		panic("stress: host exploded")
	}
	if requestID == 0 {
		return nil // a notification
	}
	id := requestID
	timeout := message.(stressMessage).timeout
	due := w.clk.Now().Add(timeout)
	w.mu.Lock()
	w.deadline[id] = due
	w.mu.Unlock()
	answer := fmt.Sprintf("answer to %#x", requestID)
	switch {
	case stopping: // answer, then stop, before the send returns
		w.deliver(p.id, id, answer)
		w.stop()
		return nil
	case k < 6: // answer before the send returns
		w.deliver(p.id, id, answer)
		return nil
	case k < 14: // lost
		return nil
	case k < 17: // from another peer
		w.clk.AfterFunc(timeout/2, func() { w.deliver(p.id+"'", id, answer) })
	}
	// On time, exactly on the deadline, or just after it; sometimes twice.
	delay := []time.Duration{timeout / 3, timeout - time.Microsecond, timeout, timeout, timeout + time.Microsecond}[r.IntN(5)]
	w.clk.AfterFunc(delay, func() { w.deliver(p.id, id, answer) })
	if r.IntN(20) == 0 {
		w.clk.AfterFunc(delay+time.Duration(r.IntN(3))*time.Microsecond, func() { w.deliver(p.id, id, answer) })
	}
	return nil
}

// deliver hands a response to the scheduler and checks promise 8's deadline:
// a response is accepted only before its request is due.
func (w *stressWorld) deliver(from peer.ID, id peer.RequestID, answer string) {
	w.op()
	now := w.clk.Now()
	if w.s.Deliver(from, id, answer) != nil {
		return
	}
	w.mu.Lock()
	due, ok := w.deadline[id]
	w.mu.Unlock()
	if !ok || !now.Before(due) {
		w.violate("%#x: a response accepted at %v, its request due at %v", uint64(id), now, due)
	}
	w.mu.Lock()
	w.accepted[id] = true
	w.mu.Unlock()
}

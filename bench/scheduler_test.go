package bench

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// countingReceiver counts the calls it gets.
type countingReceiver struct {
	responses, failures atomic.Uint64
}

func (r *countingReceiver) OnResponse(peer.RequestID, peer.ID, any) { r.responses.Add(1) }

func (r *countingReceiver) OnFailure(peer.RequestID, peer.ID, receiver.Reason) {
	r.failures.Add(1)
}

// schedSystem drives the real scheduler. One sender value and one receiver
// value serve every request: the receiver schedules the sender again when a
// request ends (if told to), and the sender sends one request per offer, so
// the harness allocates nothing per request.
type schedSystem struct {
	s       *scheduler.Scheduler
	inline  bool
	peers   []*hostPeer
	out     *fifo
	timeout time.Duration
	snd     resender
	rcv     reschedulingReceiver
	// declined counts the offers BenchmarkOffer's decliners declined; nil
	// elsewhere.
	declined *atomic.Int64
	// filled is how many requests the fills sent: the number outstanding
	// once the system has caught up with its steps.
	filled int

	errMu    sync.Mutex
	firstErr error // the first error a callback saw; guarded by errMu
}

// offerChannels is the MaxOfferChannels of every scheduler benchmark: the
// most open channels one offer lists.
//
// Listing every open channel in every offer (the default before issue 12;
// math.MaxInt now) makes an offer cost O(open channels) however few the
// sender uses. Whenever channels open faster than offers are made (a timer
// firing reopens a batch at once; another goroutine delivers responses
// while one runs the callbacks) the open count grows, each offer gets
// slower, and the backlog feeds itself: with every channel listed,
// BenchmarkLifecycleParallel took about 100 µs per request instead of about
// 1 µs. The default cap is now 64 (scheduler.DefaultMaxOfferChannels); the
// benchmarks keep 16, the configuration they have always measured. A sender
// alone in the queue may still close every channel it is shown, up to this
// many per offer.
const offerChannels = 16

// schedOptions are the ways the scheduler benchmarks differ.
type schedOptions struct {
	peers    int
	channels int // per peer
	clock    clock.Clock
	config   scheduler.Config // Clock is taken from clock; MaxOfferChannels defaults to offerChannels
	timeout  time.Duration
	// resendOn says which endings schedule the sender again, keeping the
	// number of requests outstanding constant.
	resendOnResponse, resendOnTimeout bool
	// inline runs callbacks inline (Config.InlineCallbacks): each step's
	// callbacks finish within its Deliver. Otherwise they run on the
	// scheduler's goroutine, alongside the goroutine that steps.
	inline bool
}

func newSchedSystem(o schedOptions, out *fifo) (*schedSystem, error) {
	cfg := o.config
	cfg.Clock = o.clock
	cfg.InlineCallbacks = o.inline
	if cfg.MaxOfferChannels == 0 {
		cfg.MaxOfferChannels = offerChannels
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		return nil, err
	}
	sys := &schedSystem{s: s, out: out, timeout: o.timeout, inline: o.inline}
	if sys.timeout == 0 {
		sys.timeout = longTimeout
	}
	sys.snd.sys = sys
	sys.rcv.sys = sys
	sys.rcv.onResponse, sys.rcv.onTimeout = o.resendOnResponse, o.resendOnTimeout
	sys.peers = makePeers(o.peers, "sched-", out)
	for _, p := range sys.peers {
		if err := s.Connect(p, o.channels); err != nil {
			s.Stop()
			return nil, err
		}
	}
	return sys, nil
}

func (sys *schedSystem) fail(err error) {
	sys.errMu.Lock()
	defer sys.errMu.Unlock()
	if sys.firstErr == nil {
		sys.firstErr = err
	}
}

func (sys *schedSystem) err() error {
	sys.errMu.Lock()
	defer sys.errMu.Unlock()
	return sys.firstErr
}

// schedule puts the sender in the queue once more.
func (sys *schedSystem) schedule() {
	if _, err := sys.s.Schedule(&sys.snd, 0); err != nil && !errors.Is(err, scheduler.ErrStopped) {
		sys.fail(err)
	}
}

// resender sends one request per offer on the offer's first (best) channel,
// or, while filling, as many as the offer allows until the fill is done.
// Sender callbacks never run concurrently, so its fields need no lock.
type resender struct {
	sys      *schedSystem
	fillLeft int           // requests still to send to fill the system
	filled   chan struct{} // closed when fillLeft reaches 0
}

func (snd *resender) OnOffer(o offer.Offer) {
	sys := snd.sys
	if snd.fillLeft == 0 {
		if _, err := o.Request(0, message, &sys.rcv, sys.timeout); err != nil {
			sys.fail(err)
		}
		return
	}
	k := min(o.Remaining(), snd.fillLeft)
	for i := range k {
		if _, err := o.Request(i, message, &sys.rcv, sys.timeout); err != nil {
			sys.fail(err)
			return
		}
	}
	snd.fillLeft -= k
	if snd.fillLeft > 0 {
		sys.schedule()
		return
	}
	close(snd.filled)
}

func (snd *resender) OnDiscard() {}

// reschedulingReceiver counts the endings and schedules the sender again
// after those it is told to replace.
type reschedulingReceiver struct {
	sys                   *schedSystem
	onResponse, onTimeout bool
	responses, failures   atomic.Uint64
	timeouts              atomic.Uint64
}

func (r *reschedulingReceiver) OnResponse(peer.RequestID, peer.ID, any) {
	r.responses.Add(1)
	if r.onResponse {
		r.sys.schedule()
	}
}

func (r *reschedulingReceiver) OnFailure(_ peer.RequestID, _ peer.ID, reason receiver.Reason) {
	r.failures.Add(1)
	if reason == receiver.Timeout {
		r.timeouts.Add(1)
		if r.onTimeout {
			r.sys.schedule()
		}
	}
}

func (sys *schedSystem) fill(n int) error {
	filled := make(chan struct{})
	sys.snd.fillLeft, sys.snd.filled = n, filled
	sys.filled += n
	sys.schedule()
	if err := sys.err(); err != nil {
		return err
	}
	if sys.inline {
		select {
		case <-filled:
		default:
			return errors.New("bench: the scheduler did not offer enough channels to fill")
		}
	} else {
		<-filled
	}
	return sys.err()
}

// step answers the oldest outstanding request. With callbacks on the
// scheduler's goroutine, the request that replaces the last one answered may
// not have been sent yet; the step then waits for it, as stepShared does.
func (sys *schedSystem) step() error {
	for {
		o, ok := sys.out.pop()
		if ok {
			return sys.s.Deliver(sys.peers[o.peer].id, peer.RequestID(o.id), response)
		}
		if sys.inline {
			return errFIFOEmpty
		}
		sys.out.waitNonEmpty()
	}
}

func (sys *schedSystem) waitOutstanding() { sys.out.waitNonEmpty() }

// caughtUp waits, with callbacks on the scheduler's goroutine, until the
// drainer has sent a replacement for every request answered: the FIFO
// holds as many as the fills sent. Inline, each step has sent its
// replacement before it returns.
func (sys *schedSystem) caughtUp() {
	if !sys.inline && sys.out != nil {
		sys.out.waitLen(sys.filled)
	}
}

// trailing is how far the drainer's sends trail the steps: 0 inline, and
// 0 for a system whose sends go to no FIFO.
func (sys *schedSystem) trailing() int {
	if sys.inline || sys.out == nil {
		return 0
	}
	return sys.filled - sys.out.len()
}

func (sys *schedSystem) answered() uint64 { return sys.rcv.responses.Load() }

func (sys *schedSystem) outstanding() int { return sys.s.Stats().RequestsInFlight }

func (sys *schedSystem) close() { _ = sys.s.Shutdown(context.Background()) }

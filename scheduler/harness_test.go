package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testRankSeed is the Config.RankSeed of the tests that do not set one.
const testRankSeed = 1

// world is one scheduler on a mock clock inside a synctest bubble, with the
// helpers the tests share.
type world struct {
	t     *testing.T
	clock *clock.Mock
	held  *holdingClock
	s     *Scheduler
	peers map[peer.ID]*hostPeer
	// fixed is the channel count each peer connected through connect was
	// given: promise 3 says its open and closed channels add up to it.
	fixed map[peer.ID]int
}

// inBubble runs body in a synctest bubble with a fresh mock clock and
// scheduler; the scheduler is shut down, and its invariants checked, at the
// end.
//
// The scheduler runs its callbacks inline: these tests assert the exact
// state after each step, and inline callbacks finish within the call that
// caused them. The state machine is the same in both modes; what differs
// (where callbacks run) is tested on its own in lane_test.go, and the model
// fuzzer and the stress test run in both modes.
func inBubble(t *testing.T, cfg Config, body func(w *world)) {
	t.Helper()
	cfg.InlineCallbacks = true
	inBubbleAsIs(t, cfg, body)
}

// inBubbleAsIs is inBubble with the callback mode cfg asks for.
func inBubbleAsIs(t *testing.T, cfg Config, body func(w *world)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		held := &holdingClock{Mock: mock}
		cfg.Clock = held
		if cfg.RankSeed == 0 {
			cfg.RankSeed = testRankSeed // replay, whatever the order of equal peers matters to
		}
		s, err := New(cfg)
		require.NoError(t, err)
		w := &world{t: t, clock: mock, held: held, s: s, peers: map[peer.ID]*hostPeer{}, fixed: map[peer.ID]int{}}
		body(w)
		require.NoError(t, s.Shutdown(context.Background()))
		w.checkChannels()
	})
}

// settle waits until every goroutine of the bubble, the callback goroutine
// included, is blocked, and orders what the callbacks wrote before what the
// caller reads next: the drainer's last act is to release callbacksMu.
func (w *world) settle() { settleScheduler(w.s) }

// settleScheduler waits until s is idle with every goroutine of the bubble blocked.
// synctest.Wait alone is not enough: a callback asleep in the mock clock's
// Add counts as blocked. Receiving from whenIdle orders what the callbacks
// wrote before what the caller reads next.
func settleScheduler(s *Scheduler) {
	for {
		synctest.Wait()
		select {
		case <-s.whenIdle():
			return
		default:
			<-s.whenIdle()
		}
	}
}

// holdingClock is the mock clock with a switch that holds back the
// scheduler's timer callbacks: time passes, the timer "fires", but the
// scheduler does not hear of it. It lets a test act in the gap between a
// deadline and the timer's callback, which a real clock leaves open.
type holdingClock struct {
	*clock.Mock
	hold atomic.Bool
}

func (c *holdingClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.Mock.AfterFunc(d, func() {
		if !c.hold.Load() {
			f()
		}
	})
}

// holdTimers holds back the scheduler's timer callbacks from now on.
func (w *world) holdTimers() { w.held.hold.Store(true) }

// advance moves the mock clock on and lets every timer callback finish.
func (w *world) advance(d time.Duration) {
	w.t.Helper()
	synctest.Wait()
	w.clock.Add(d)
	synctest.Wait()
}

func (w *world) connect(id peer.ID, channels int) *hostPeer {
	w.t.Helper()
	p := &hostPeer{id: id}
	require.NoError(w.t, w.s.Connect(p, channels))
	w.peers[id] = p
	w.fixed[id] = channels
	return p
}

// checkChannels asserts promise 3's invariant: open + closed = channels, for
// every peer and in total.
func (w *world) checkChannels() {
	w.t.Helper()
	st := w.s.Stats()
	open, closed := 0, 0
	for _, u := range w.s.PeerUsage(nil) {
		// Usage derives Channels from Open and Closed; what can break is
		// that they add up to the count the peer connected with.
		if n, ok := w.fixed[u.ID]; ok {
			require.Equal(w.t, n, u.Limit, "peer %s's fixed limit", u.ID)
			require.Equal(w.t, n, u.ChannelsOpen+u.ChannelsClosed, "peer %s: open + closed", u.ID)
		}
		require.GreaterOrEqual(w.t, u.ChannelsOpen, 0)
		open += u.ChannelsOpen
		closed += u.ChannelsClosed
	}
	require.Equal(w.t, st.ChannelsOpen, open)
	require.Equal(w.t, st.ChannelsClosed, closed)
}

// usage returns one peer's channel counts.
func (w *world) usage(id peer.ID) peer.Usage {
	for _, u := range w.s.PeerUsage(nil) {
		if u.ID == id {
			return u
		}
	}
	return peer.Usage{}
}

// hostPeer is a host connection that records what it is asked to send and
// can be told to fail or panic.
type hostPeer struct {
	id peer.ID

	mu     sync.Mutex
	sent   []sentMessage
	fail   error
	panics any
	onSend func(requestID peer.RequestID, message any)
}

type sentMessage struct {
	requestID peer.RequestID
	message   any
}

func (p *hostPeer) ID() peer.ID { return p.id }

func (p *hostPeer) Send(requestID peer.RequestID, message any) error {
	p.mu.Lock()
	fail, panics, hook := p.fail, p.panics, p.onSend
	if fail == nil && panics == nil {
		p.sent = append(p.sent, sentMessage{requestID, message})
	}
	p.mu.Unlock()
	if hook != nil {
		hook(requestID, message)
	}
	if panics != nil {
		panic(panics)
	}
	return fail
}

func (p *hostPeer) sends() []sentMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sentMessage(nil), p.sent...)
}

var errRefused = errors.New("host refused the message")

// script is a sender whose behaviour on each offer is given by a function;
// it records every callback it gets.
type script struct {
	name      string
	onOffer   func(o offer.Offer) // nil: decline
	onDiscard func()
	offers    []offeredView
	discards  int
	mu        sync.Mutex
}

// offeredView is what a sender saw in one offer.
type offeredView struct {
	channels []peer.ID
	size     int
}

func (sc *script) OnOffer(o offer.Offer) {
	view := offeredView{size: o.Size()}
	for i := range o.Len() {
		c, _ := o.Channel(i)
		view.channels = append(view.channels, c.Peer)
	}
	sc.mu.Lock()
	sc.offers = append(sc.offers, view)
	fn := sc.onOffer
	sc.mu.Unlock()
	if fn != nil {
		fn(o)
	}
}

func (sc *script) OnDiscard() {
	sc.mu.Lock()
	sc.discards++
	fn := sc.onDiscard
	sc.mu.Unlock()
	if fn != nil {
		fn()
	}
}

func (sc *script) offerCount() int {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return len(sc.offers)
}

// outcomes records every receiver call, per request.
type outcomes struct {
	mu    sync.Mutex
	calls map[peer.RequestID][]string
}

func newOutcomes() *outcomes { return &outcomes{calls: map[peer.RequestID][]string{}} }

func (o *outcomes) OnResponse(id peer.RequestID, from peer.ID, response any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[id] = append(o.calls[id], fmt.Sprintf("response from %s: %v", from, response))
}

func (o *outcomes) OnFailure(id peer.RequestID, from peer.ID, reason receiver.Reason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls[id] = append(o.calls[id], fmt.Sprintf("failure from %s: %v", from, reason))
}

func (o *outcomes) of(id peer.RequestID) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.calls[id]...)
}

func (o *outcomes) total() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, c := range o.calls {
		n += len(c)
	}
	return n
}

// sendFirst returns an offer callback that requests on the first channel
// (of peer want, if given) with the receiver and timeout, recording the ID.
func sendFirst(r receiver.Receiver, timeout time.Duration, ids *[]peer.RequestID, want ...peer.ID) func(offer.Offer) {
	return func(o offer.Offer) {
		for i := range o.Len() {
			c, _ := o.Channel(i)
			if len(want) > 0 && c.Peer != want[0] {
				continue
			}
			id, err := o.Request(i, "ping", r, timeout)
			if err == nil && ids != nil {
				*ids = append(*ids, id)
			}
			return
		}
	}
}

func sortedIDs(ids []peer.ID) []peer.ID {
	out := append([]peer.ID(nil), ids...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

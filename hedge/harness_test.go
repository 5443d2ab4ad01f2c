package hedge_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
)

// The deadlines of the tests' requests.
const (
	soft = 100 * time.Millisecond
	hard = time.Second
)

// world is a scheduler and a Hedger on a mock clock inside a synctest
// bubble, with the peers the test connects.
type world struct {
	t     *testing.T
	clock *clock.Mock
	s     *scheduler.Scheduler
	h     *hedge.Hedger
	peers map[peer.ID]*host
	// calls names each call sent through send by its first request's ID,
	// which the tests answer through the scheduler.
	calls map[peer.RequestID]hedge.CallID
}

// call returns the CallID of the call whose first request was id.
func (w *world) call(id peer.RequestID) hedge.CallID {
	w.t.Helper()
	c, ok := w.calls[id]
	require.True(w.t, ok, "no call's first request was %d", id)
	return c
}

// inBubble runs body in a synctest bubble with a fresh mock clock, a
// scheduler that runs its callbacks inline (each step's callbacks have run
// when the call that caused them returns, so a test can assert the state
// after each) and a Hedger with a budget of cfg. The scheduler is shut
// down at the end.
func inBubble(t *testing.T, cfg hedge.BudgetConfig, body func(w *world)) {
	t.Helper()
	inBubbleWith(t, scheduler.Config{InlineCallbacks: true}, cfg, hedge.Options{}, body)
}

// inBubbleWith is inBubble with a scheduler of config sc (its clock the
// mock) and a Hedger of options opts.
func inBubbleWith(t *testing.T, sc scheduler.Config, cfg hedge.BudgetConfig, opts hedge.Options, body func(w *world)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		mock := clock.NewMock()
		sc.Clock = mock
		if sc.RankSeed == 0 {
			sc.RankSeed = 1 // a fixed order of equal channels, so each test replays
		}
		s, err := scheduler.New(sc)
		require.NoError(t, err)
		b, err := hedge.NewBudget(cfg)
		require.NoError(t, err)
		h, err := hedge.NewHedger(s, b, opts)
		require.NoError(t, err)
		w := &world{t: t, clock: mock, s: s, h: h, peers: map[peer.ID]*host{}, calls: map[peer.RequestID]hedge.CallID{}}
		body(w)
		require.NoError(t, s.Shutdown(context.Background()))
	})
}

// advance moves the mock clock on and lets every callback it causes finish.
func (w *world) advance(d time.Duration) {
	synctest.Wait()
	w.clock.Add(d)
	synctest.Wait()
}

// askA is most tests' start: peers A and B with one channel each, and
// "get x" sent to A for r. It returns B, the peer a hedge can go to, and
// the request's ID.
func (w *world) askA(r receiver.Receiver) (b *host, id peer.RequestID) {
	w.t.Helper()
	w.connect("A", 1)
	b = w.connect("B", 1)
	return b, w.request("A", "get x", r)
}

func (w *world) connect(id peer.ID, channels int) *host {
	w.t.Helper()
	p := &host{id: id}
	require.NoError(w.t, w.s.Connect(p, channels))
	w.peers[id] = p
	return p
}

// request sends message to peer to through the Hedger, with the tests'
// deadlines, from a sender of its own, and returns the request's ID.
func (w *world) request(to peer.ID, message any, r receiver.Receiver) peer.RequestID {
	w.t.Helper()
	return w.requestWith(to, message, r, soft, hard)
}

func (w *world) requestWith(to peer.ID, message any, r receiver.Receiver, soft, hard time.Duration) peer.RequestID {
	w.t.Helper()
	return w.send(to, offer.Request{Message: message, Receiver: r, Soft: soft, Timeout: hard})
}

// send sends req to peer to through the Hedger's Send, from a sender of
// its own, and returns its first request's ID (w.call gives its CallID).
func (w *world) send(to peer.ID, req offer.Request) peer.RequestID {
	w.t.Helper()
	var call hedge.CallID
	var err error
	offered := false
	_, serr := w.s.Schedule(senderFunc(func(o offer.Offer) {
		for i, c := range o.All() {
			if c.Peer == to {
				offered = true
				call, err = w.h.Send(o, i, req)
				return
			}
		}
	}), 0)
	require.NoError(w.t, serr)
	synctest.Wait()
	require.True(w.t, offered, "no channel of %s offered", to)
	require.NoError(w.t, err)
	require.NotZero(w.t, call)
	sent := w.peers[to].sends()
	id := sent[len(sent)-1].id
	w.calls[id] = call
	return id
}

// closed returns how many of peer id's channels are closed.
func (w *world) closed(id peer.ID) int {
	for _, u := range w.s.PeerUsage(nil) {
		if u.ID == id {
			return u.ChannelsClosed
		}
	}
	return -1
}

// host is a host's connection that records what it is asked to send.
type host struct {
	id peer.ID

	mu   sync.Mutex
	sent []sentMessage
	fail error // Send fails with it, if set
}

type sentMessage struct {
	id      peer.RequestID
	message any
}

func (p *host) ID() peer.ID { return p.id }

func (p *host) Send(requestID peer.RequestID, message any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail != nil {
		return p.fail
	}
	p.sent = append(p.sent, sentMessage{requestID, message})
	return nil
}

// sends returns what the peer was sent.
func (p *host) sends() []sentMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sentMessage(nil), p.sent...)
}

// only returns the one request the peer was sent, failing the test if it
// was sent none or more.
func (p *host) only(t *testing.T) sentMessage {
	t.Helper()
	s := p.sends()
	require.Len(t, s, 1, "messages sent to %s", p.id)
	return s[0]
}

type senderFunc func(offer.Offer)

func (f senderFunc) OnOffer(o offer.Offer) { f(o) }
func (senderFunc) OnDiscard()              {}

// outcomes is a receiver that records every call it gets, by request.
type outcomes struct {
	mu  sync.Mutex
	got map[peer.RequestID][]string
}

func newOutcomes() *outcomes { return &outcomes{got: map[peer.RequestID][]string{}} }

func (o *outcomes) add(id peer.RequestID, s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got[id] = append(o.got[id], s)
}

func (o *outcomes) OnResponse(id peer.RequestID, from peer.ID, response any) {
	o.add(id, fmt.Sprintf("response from %s: %v", from, response))
}

func (o *outcomes) OnFailure(id peer.RequestID, from peer.ID, reason receiver.Reason) {
	o.add(id, fmt.Sprintf("failure from %s: %v", from, reason))
}

// of returns the calls the receiver got for call id: a Hedger calls its
// receivers with the CallID as the request ID.
func (o *outcomes) of(id hedge.CallID) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.got[peer.RequestID(id)]...)
}

func (o *outcomes) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, g := range o.got {
		n += len(g)
	}
	return n
}

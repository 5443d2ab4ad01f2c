package fetch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

var _ Refuser = (*Rippled)(nil)

// TestRippledRules: the set's growth, the request sizes, the timer's
// verdicts and the peer score, as rippled has them.
func TestRippledRules(t *testing.T) {
	rc, err := RippledConfig{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if rc.Start != 5 || rc.Add != 3 || rc.Interval != 3*time.Second || rc.MaxTimeouts != 6 || rc.Blind != 12 || rc.Reply != 128 || rc.Window != 256 {
		t.Fatalf("defaults %+v, want rippled's", rc)
	}

	for _, c := range []struct{ connectedInSet, want int }{
		{0, 5}, // at the start, or when every peer of the set has gone
		{1, 3},
		{5, 3},
		{40, 3},
	} {
		if got := peersToAdd(c.connectedInSet, rc); got != c.want {
			t.Errorf("peersToAdd(%d) = %d, want %d", c.connectedInSet, got, c.want)
		}
	}

	for _, c := range []struct {
		reason trigger
		recent int
		want   int
	}{
		{triggerAdded, 0, 12},
		{triggerAdded, 250, 6}, // what the window leaves
		{triggerAdded, 300, 0},
		{triggerTimeout, 0, 12},
		{triggerTimeout, 256, 12}, // a timeout asks again whatever was asked
		{triggerReply, 0, 128},
		{triggerReply, 128, 128},
		{triggerReply, 200, 56},
		{triggerReply, 256, 0},
		{triggerReply, 1000, 0},
	} {
		if got := askSize(c.reason, c.recent, rc); got != c.want {
			t.Errorf("askSize(%d, recent %d) = %d, want %d", c.reason, c.recent, got, c.want)
		}
	}

	// Seven intervals without progress give up, whatever progress came
	// between them: the count is never reset.
	timeouts := 0
	for i, c := range []struct {
		progressed bool
		want       tickVerdict
		timeouts   int
	}{
		{true, tickWait, 0},
		{false, tickWiden, 1},
		{false, tickWiden, 2},
		{true, tickWait, 2},
		{false, tickWiden, 3},
		{false, tickWiden, 4},
		{false, tickWiden, 5},
		{true, tickWait, 5},
		{false, tickWiden, 6},
		{true, tickWait, 6},
		{false, tickGiveUp, 7},
	} {
		var v tickVerdict
		timeouts, v = onTick(c.progressed, timeouts, 6)
		if v != c.want || timeouts != c.timeouts {
			t.Errorf("tick %d (progress %v): %d timeouts, verdict %d; want %d, %d", i, c.progressed, timeouts, v, c.timeouts, c.want)
		}
	}
	if n, v := onTick(false, 1000, -1); v != tickWiden || n != 1001 {
		t.Errorf("never giving up: %d, %d", n, v)
	}

	for _, c := range []struct {
		random  int
		has     bool
		latency time.Duration
		want    int
	}{
		{0, false, 0, -8000},
		{9999, false, 0, 1999},
		{5000, true, 0, 7000},
		{5000, false, 20 * time.Millisecond, 4400},
		{5000, false, 20*time.Millisecond + 900*time.Microsecond, 4400}, // whole milliseconds
		{5000, true, 300 * time.Millisecond, 6000},
	} {
		if got := peerScore(c.random, c.has, c.latency); got != c.want {
			t.Errorf("peerScore(%d, %v, %v) = %d, want %d", c.random, c.has, c.latency, got, c.want)
		}
	}

	for _, bad := range []RippledConfig{{Start: -1}, {Add: -1}, {Interval: -1}, {Blind: -1}, {Reply: MaxBatch + 1}, {Window: -1}} {
		if _, err := NewRippled(Config{Root: simLedger.Root()}, bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("NewRippled(%+v): %v, want ErrBadConfig", bad, err)
		}
	}
}

// objectsPeer records every request sent to it, with its hashes.
type objectsPeer struct {
	id   peer.ID
	mu   sync.Mutex
	reqs []sentRequest
}

type sentRequest struct {
	id     peer.RequestID
	hashes []ledger.Hash
}

func (p *objectsPeer) ID() peer.ID { return p.id }

func (p *objectsPeer) Send(id peer.RequestID, msg any) error {
	req, ok := ledger.AsGetObjects(msg)
	if !ok {
		return fmt.Errorf("not a request: %T", msg)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqs = append(p.reqs, sentRequest{id, req.Hashes})
	return nil
}

func (p *objectsPeer) sent() []sentRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]sentRequest(nil), p.reqs...)
}

// TestRippledSteps follows the strategy through its first seconds with
// peers that answer only when the test says: the root goes blind to each of
// the 5 best-scored peers; the first answer is followed up at once, to the
// same peer, with every child (fewer than 128), and the others, which bring
// nothing new, are not; an interval with progress
// changes nothing but gives up the request out for a whole interval; each
// interval without progress sends every idle peer of the set a blind
// request of at most 12 hashes and adds 3 peers; no peer ever has two
// requests out; and the seventh interval without progress gives up.
func TestRippledSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		rp, err := NewRippled(Config{Root: simLedger.Root(), Clock: clk, StallTimeout: time.Hour}, RippledConfig{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		peers := map[peer.ID]*objectsPeer{}
		for i := range 12 {
			p := &objectsPeer{id: simID(i)}
			peers[p.id] = p
			if err := rp.Connect(p, 4); err != nil {
				t.Fatal(err)
			}
		}
		setSize := func() int {
			rp.mu.Lock()
			defer rp.mu.Unlock()
			return len(rp.set)
		}
		// outstanding counts, per peer, the requests sent and not answered.
		answered := map[peer.RequestID]bool{}
		outstanding := func() map[peer.ID][]sentRequest {
			out := map[peer.ID][]sentRequest{}
			for id, p := range peers {
				for _, r := range p.sent() {
					if !answered[r.id] {
						out[id] = append(out[id], r)
					}
				}
			}
			return out
		}
		done := make(chan error, 1)
		go func() {
			_, err := rp.Run(context.Background())
			done <- err
		}()
		synctest.Wait()

		out := outstanding()
		if len(out) != 5 || setSize() != 5 {
			t.Fatalf("at the start %d peers asked, set of %d; want the root asked of each of 5", len(out), setSize())
		}
		var first peer.ID
		for id, reqs := range out {
			if first == "" || id < first {
				first = id
			}
			if len(reqs) != 1 || len(reqs[0].hashes) != 1 || reqs[0].hashes[0] != simLedger.Root() {
				t.Fatalf("first requests %v", reqs)
			}
		}
		// The first answer takes the root and is followed up; the others
		// bring a duplicate, and are not.
		others := out
		root := out[first][0]
		if err := rp.Deliver(first, root.id, simLedger.Answer(ledger.GetObjects{Hashes: root.hashes})); err != nil {
			t.Fatal(err)
		}
		answered[root.id] = true
		for id, reqs := range others {
			if id == first {
				continue
			}
			if err := rp.Deliver(id, reqs[0].id, simLedger.Answer(ledger.GetObjects{Hashes: reqs[0].hashes})); err != nil {
				t.Fatal(err)
			}
			answered[reqs[0].id] = true
		}
		out = outstanding()
		if len(out) != 1 || len(out[first]) != 1 || len(out[first][0].hashes) == 0 || len(out[first][0].hashes) > 128 {
			t.Fatalf("after the root's answers: %v; want one follow-up to %s", out, first)
		}
		children := len(out[first][0].hashes)

		// An interval with progress: the follow-up, out for the whole
		// interval, is given up; nothing is sent.
		clk.Add(3 * time.Second)
		synctest.Wait()
		if out := outstanding(); len(out) != 1 || setSize() != 5 {
			t.Fatalf("after an interval with progress: %d peers asked, set of %d", len(out), setSize())
		}
		for _, r := range outstanding()[first] {
			if err := rp.Deliver(first, r.id, nil); !errors.Is(err, receiver.ErrLateResponse) {
				t.Fatalf("the answer to a given-up request: %v", err)
			}
			answered[r.id] = true
		}

		// Intervals without progress: the set grows by 3 each time, to
		// the 12 peers, and the waiting children go out blind, 12 at most
		// a request, one request per peer (the strategy's own count: the
		// requests of the interval before were given up).
		if children != 16 {
			t.Fatalf("the root has %d children; the steps below assume 16", children)
		}
		pending := func() map[peer.ID][]*psRequest {
			rp.mu.Lock()
			defer rp.mu.Unlock()
			out := map[peer.ID][]*psRequest{}
			for _, r := range rp.pending {
				out[r.to] = append(out[r.to], r)
			}
			return out
		}
		for i, want := range []struct{ set, asked int }{
			// While peers join, each new one takes its own (the 4
			// children beyond the 12 the set shares); then the set's
			// shared 12 alone are out.
			{8, children}, {11, children}, {12, children}, {12, 12}, {12, 12}, {12, 12},
		} {
			clk.Add(3 * time.Second)
			synctest.Wait()
			if got := setSize(); got != want.set {
				t.Errorf("after %d intervals without progress, a set of %d, want %d", i+1, got, want.set)
			}
			asked := map[ledger.Hash]bool{}
			for id, reqs := range pending() {
				if len(reqs) > 1 {
					t.Errorf("%s has %d requests out", id, len(reqs))
				}
				for _, r := range reqs {
					if len(r.hashes) > 12 {
						t.Errorf("a blind request for %d hashes to %s", len(r.hashes), id)
					}
					for _, h := range r.hashes {
						asked[h] = true
					}
				}
			}
			if len(asked) != want.asked {
				t.Errorf("after %d intervals without progress, %d hashes out, want %d", i+1, len(asked), want.asked)
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned after %d intervals without progress: %v", i+1, err)
			default:
			}
		}
		clk.Add(3 * time.Second)
		synctest.Wait()
		err = <-done
		if !errors.Is(err, ErrGaveUp) || !errors.Is(err, ErrIncomplete) || !strings.Contains(err.Error(), "7 intervals of 3s") {
			t.Fatalf("Run: %v, want an IncompleteError caused by ErrGaveUp after 7 intervals", err)
		}
		if err := rp.Deliver(first, 1, nil); !errors.Is(err, ErrRippledStopped) {
			t.Errorf("Deliver after Run: %v", err)
		}
	})
}

// TestRippledFetch pins a virtual-time fetch with the rippled strategy on
// 16 honest simulated peers: it completes, every object verified, in the
// time and with the requests below (the strategy is a function of its
// seeds, so a change to them must be deliberate). The 5 peers of the set
// are asked for the root; the first to answer gets every request after:
// with every reply useful, no interval passes without progress, and the
// others, whose answers brought nothing new, are never asked again.
func TestRippledFetch(t *testing.T) {
	o := runSim(t, sim{strategy: "rippled", peers: honest(16), seed: 1, rippled: RippledConfig{Seed: 1},
		cfg: Config{StallTimeout: 30 * time.Second, ProgressEvery: 100 * ms}})
	mustComplete(t, o, nil)
	t.Logf("%v virtual, %d requests, %d timeouts, %d peers asked", o.virtual, o.rep.Requests, o.rep.Timeouts, len(o.rep.Peers))
	const wantWall, wantRequests = 720876883 * time.Nanosecond, 38
	if wall := time.Duration(o.rep.Wall); wall != wantWall || o.rep.Requests != wantRequests {
		t.Errorf("%v virtual and %d requests, want %v and %d", wall, o.rep.Requests, wantWall, wantRequests)
	}
	// The five blind requests ask for the root alone; every other asks
	// for up to 128 hashes, as many as wait.
	if o.rep.BatchMean <= 1 || o.rep.BatchMean > rippledReply {
		t.Errorf("batch mean %.1f, want above 1 and at most %d", o.rep.BatchMean, rippledReply)
	}
	if o.rep.Strategy != "rippled" || o.rep.Timeouts != 0 || len(o.rep.Peers) != 5 {
		t.Errorf("report %s with %d timeouts, %d peers asked; want the 5 of the set", o.rep.Strategy, o.rep.Timeouts, len(o.rep.Peers))
	}
	for _, p := range o.rep.Peers {
		if p.Requests != 1 && p.Objects != o.rep.Objects {
			t.Errorf("peer row %+v: want the root alone, or every object", p)
		}
	}
}

// TestRippledGivesUp: peers that never answer make no progress, and the
// fetch gives up at the seventh interval without it, 21s in; told never to
// give up, it runs on until its stall timeout.
func TestRippledGivesUp(t *testing.T) {
	silent := with(6, 6, func(p *simnet.Profile) { p.Faults[simnet.Ignore] = 1 })
	cfg := Config{StallTimeout: 30 * time.Second, ProgressEvery: 100 * ms}
	o := runSim(t, sim{strategy: "rippled", peers: silent, seed: 1, cfg: cfg})
	if !errors.Is(o.err, ErrGaveUp) || o.virtual < 21*time.Second || o.virtual > 22*time.Second {
		t.Fatalf("after %v: %v; want to give up at 21s", o.virtual, o.err)
	}
	o = runSim(t, sim{strategy: "rippled", peers: silent, seed: 1, cfg: cfg, rippled: RippledConfig{MaxTimeouts: -1}})
	if !errors.Is(o.err, ErrStalled) || errors.Is(o.err, ErrGaveUp) || o.virtual < 30*time.Second {
		t.Fatalf("after %v: %v; want a stall at 30s", o.virtual, o.err)
	}
}

// TestRippledUnderEachFault: under each fault of the simulated network the
// rippled strategy fetches the whole ledger, every object verified, its
// timer scaled as the other strategies' timeout is (3s to 300ms). It is
// told never to give up: under loss, spoofed or late answers, rippled's
// seven intervals without progress over the whole fetch come in a few
// seconds, and it would give up (see TestRippledGivesUp). The faults'
// own checks are not applied: they count timeouts the other strategies
// meet, and the rippled strategy never asks most peers.
func TestRippledUnderEachFault(t *testing.T) {
	for _, c := range faultCases() {
		t.Run(c.name, func(t *testing.T) {
			o := runSim(t, sim{
				strategy: "rippled",
				peers:    c.peers,
				seed:     11,
				cfg:      Config{StallTimeout: 5 * time.Second, ProgressEvery: 100 * ms},
				rippled:  RippledConfig{Interval: 300 * ms, Seed: 11, MaxTimeouts: -1},
			})
			mustComplete(t, o, nil)
			t.Logf("%v virtual, %d requests, %d timeouts, %d retries, dropped %+v",
				o.virtual, o.rep.Requests, o.rep.Timeouts, o.rep.Retries, o.rep.Dropped)
		})
	}
}

// TestRippledSharedRequestOutlivesALackingAnswer: the root goes to every
// peer of the set at once; a peer that lacks it answers first, and the
// root is still taken from the next answer that holds it, whose peer is
// followed up. (The lacking answer used to put the root back to be asked
// again, and the frontier then dropped the root the next answer brought:
// in an overlay, a node next to a seeder whose other neighbours answered
// first made no progress, and gave up.)
func TestRippledSharedRequestOutlivesALackingAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		rp, err := NewRippled(Config{Root: simLedger.Root(), Clock: clk, StallTimeout: time.Hour}, RippledConfig{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var peers []*objectsPeer
		for i := range 3 {
			p := &objectsPeer{id: simID(i)}
			peers = append(peers, p)
			if err := rp.Connect(p, 1); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = rp.Run(ctx)
		}()
		synctest.Wait()
		for _, p := range peers {
			if r := p.sent(); len(r) != 1 || len(r[0].hashes) != 1 || r[0].hashes[0] != simLedger.Root() {
				t.Fatalf("%s was sent %v; want the root", p.id, r)
			}
		}
		if err := rp.Deliver(peers[0].id, peers[0].sent()[0].id, ledger.Objects{}); err != nil {
			t.Fatal(err)
		}
		root := peers[1].sent()[0]
		if err := rp.Deliver(peers[1].id, root.id, simLedger.Answer(ledger.GetObjects{Hashes: root.hashes})); err != nil {
			t.Fatal(err)
		}
		if got := len(peers[1].sent()); got != 2 {
			t.Errorf("the peer that brought the root was sent %d requests, want a follow-up", got)
		}
		if got := len(peers[0].sent()) + len(peers[2].sent()); got != 2 {
			t.Errorf("the others were sent %d requests, want only the root each", got)
		}
		rp.mu.Lock()
		verified := rp.front.verified
		rp.mu.Unlock()
		if verified != 1 {
			t.Errorf("%d objects verified, want the root", verified)
		}
		cancel()
		<-done
	})
}

package fetch

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/penalty"
)

// TestHedgesWaitForTheTail drives the fetch's sender through a scheduler
// with two peers that never answer: requests that pass their soft
// deadlines while hashes wait to be asked are not hedged (the channels
// have work to carry); once nothing waits, they are hedged, in the order
// they became slow, as far as the budget allows; each hedge counts as a
// request to its peer, and the answer of either request ends both in the
// tally, its response time measured from its own send.
func TestHedgesWaitForTheTail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		s, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Shutdown(context.Background()) }()
		a, bp := &recordingPeer{id: "A"}, &recordingPeer{id: "B"}
		for _, p := range []*recordingPeer{a, bp} {
			if err := s.Connect(p, 2); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Config{Root: simLedger.Root(), Clock: clk, Batch: 1, HedgesPerThousand: 1}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		b := newBulk(cfg, s)
		b.mu.Lock()
		b.beginLocked(clk.Now())
		for i := range 4 {
			b.front.discover(ledger.Hash{byte(i + 1)})
		}
		b.mu.Unlock()
		b.scheduleFromOutside() // four requests of one hash, one hash left waiting
		if len(a.sent())+len(bp.sent()) != 4 {
			t.Fatalf("sent %d and %d requests, want 4 in all", len(a.sent()), len(bp.sent()))
		}
		soft, _ := b.timing.Deadlines("A") // before any answer: every peer's

		synctest.Wait()
		clk.Add(soft)
		synctest.Wait()
		st := b.hedger.Stats()
		b.mu.Lock()
		slow := len(b.slow)
		b.mu.Unlock()
		if st.Slow != 4 || slow != 4 || st.Waiting != 0 || st.Hedges != 0 || st.Tokens != hedge.DefaultBurst {
			t.Fatalf("while a hash waits: %+v, %d kept slow; want 4 slow requests kept, none hedged", st, slow)
		}

		// The last hash leaves the frontier: the tail.
		b.mu.Lock()
		b.front.take(nil, 1, "elsewhere", true)
		b.wakeLocked()
		order := make([]peer.RequestID, 0, 4)
		for _, r := range b.slow {
			order = append(order, r.id)
		}
		b.mu.Unlock()
		st = b.hedger.Stats()
		if st.Waiting != 4 || st.Tokens != hedge.DefaultBurst-4 || len(order) != 0 {
			t.Fatalf("at the tail: %+v, %v still kept; want every slow request hedged", st, order)
		}

		// A's first request answers (empty: its hash goes back to be asked
		// again): its hedge, waiting, leaves the queue with its token.
		// A's channel opens, and a hedge of one of B's requests takes it.
		first := a.sent()[0]
		if err := s.Deliver("A", first, ledger.Objects{}); err != nil {
			t.Fatal(err)
		}
		st = b.hedger.Stats()
		if st.Live != 3 || st.Hedges != 1 || st.Waiting != 2 || st.Tokens != hedge.DefaultBurst-3 {
			t.Fatalf("after A's answer: %+v; want 3 requests live, 1 hedge sent and 2 waiting, 1 token back", st)
		}
		hedged := a.sent()[len(a.sent())-1]
		b.mu.Lock()
		pa, pb := *b.tally.peer("A"), *b.tally.peer("B")
		hedges := b.tally.hedges
		b.mu.Unlock()
		if hedges != 1 || pa.requests != len(a.sent()) || pb.requests != 2 || pb.inFlight != 2 {
			t.Errorf("%d hedges; A %+v, B %+v; want 1, every send to A counted, B's 2 in flight", hedges, pa, pb)
		}

		// The hedge answers 10ms later: its request and B's end together,
		// its response time from its own send.
		clk.Add(10 * time.Millisecond)
		synctest.Wait()
		if err := s.Deliver("A", hedged, ledger.Objects{}); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		pa, pb = *b.tally.peer("A"), *b.tally.peer("B")
		b.mu.Unlock()
		if pb.inFlight != 1 || pb.answered != 0 {
			t.Errorf("B after its request's hedge answered: %+v; want 1 in flight, none answered", pb)
		}
		if got := pa.rtts[len(pa.rtts)-1]; got != 10*time.Millisecond {
			t.Errorf("the hedge's response time is %v, want 10ms from its own send", got)
		}
	})
}

// TestHedgesAvoidBenchedPeers: at the tail, a slow request's hedge goes to
// no peer the judge benches at that moment. A and C each have their one
// channel busy with a request; B, idle, has just answered with nothing and
// is benched. When the requests pass their soft deadlines, their hedges wait
// for a channel of a peer the judge allows, rather than take B's, the only
// open one. (The Hedger's own avoid list is fixed when it is made, and
// hedges once went to B.)
func TestHedgesAvoidBenchedPeers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		s, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Shutdown(context.Background()) }()
		a, bp, c := &recordingPeer{id: "A"}, &recordingPeer{id: "B"}, &recordingPeer{id: "C"}
		for _, p := range []*recordingPeer{a, c} {
			if err := s.Connect(p, 1); err != nil {
				t.Fatal(err)
			}
		}
		cfg, err := Config{Root: simLedger.Root(), Clock: clk, Batch: 1, HedgesPerThousand: 1,
			Penalty: penalty.Config{Backoff: time.Minute}}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		b := newBulk(cfg, s)
		b.mu.Lock()
		b.beginLocked(clk.Now())
		b.front.discover(ledger.Hash{1})
		b.mu.Unlock()
		b.scheduleFromOutside() // the root and one hash: one request each to A and C
		if len(a.sent()) != 1 || len(c.sent()) != 1 {
			t.Fatalf("sent %d and %d requests, want one each to A and C", len(a.sent()), len(c.sent()))
		}
		if err := s.Connect(bp, 1); err != nil {
			t.Fatal(err)
		}
		b.mu.Lock()
		b.judgeLocked("B", []itemResult{{kind: itemAbsent}}, clk.Now()) // an answer with nothing: benched for 30s or more
		benched := !b.mayAskLocked("B", clk.Now())
		b.mu.Unlock()
		if !benched {
			t.Fatal("B is not benched")
		}

		soft, _ := b.timing.Deadlines("A")
		synctest.Wait()
		clk.Add(soft)
		synctest.Wait()
		st := b.hedger.Stats()
		if len(bp.sent()) != 0 || st.Hedges != 0 || st.Waiting != 2 {
			t.Fatalf("B, benched, got %d requests; hedger %+v; want both hedges waiting", len(bp.sent()), st)
		}
	})
}

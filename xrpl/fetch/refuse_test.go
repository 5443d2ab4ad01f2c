package fetch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/simnet"
)

// Refusals: a peer's explicit "not now" (receiver.Refused) puts the hashes
// back to be asked elsewhere, counts as a refusal and not a timeout, does
// not make the peer suspect, and is no response time for the estimators
// behind timeouts and hedging.

// TestARefusalPutsTheHashesBack drives the fetch's receiver by hand: a
// refusal and, for contrast, a timeout, each of one request for one hash.
func TestARefusalPutsTheHashesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		s, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true}) // no peer: nothing is sent
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s.Shutdown(context.Background()) }()
		cfg, err := Config{Root: simLedger.Root(), Clock: clk}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		b := newBulk(cfg, s)
		b.mu.Lock()
		b.beginLocked(clk.Now())
		b.mu.Unlock()

		// ask sends the waiting hash to the peer to, as a request in flight.
		ask := func(id hedge.CallID, to peer.ID) *request {
			b.mu.Lock()
			defer b.mu.Unlock()
			hashes := b.front.take(nil, 1, to, true)
			if len(hashes) != 1 {
				t.Fatalf("%d hashes waiting to ask %s", len(hashes), to)
			}
			r := &request{b: b, id: id, to: to, hashes: hashes, sentAt: clk.Now()}
			b.inFlight[id] = r
			b.tally.sent(to)
			return r
		}
		root := simLedger.Root()

		ask(1, "busy").OnFailure(1, "busy", receiver.Refused)
		b.mu.Lock()
		busy := b.tally.peer("busy")
		switch {
		case b.tally.refused != 1 || b.tally.timeouts != 0 || b.tally.retries != 1:
			t.Errorf("refused %d, timeouts %d, retries %d; want 1, 0, 1", b.tally.refused, b.tally.timeouts, b.tally.retries)
		case b.front.waitingCount() != 1 || !b.front.failedBy(root, "busy"):
			t.Errorf("the root is not back, to be asked of another peer first")
		case busy.streak != 0 || busy.failures != 1 || busy.inFlight != 0:
			t.Errorf("the refusing peer: streak %d, failures %d, in flight %d; want 0, 1, 0", busy.streak, busy.failures, busy.inFlight)
		case len(busy.rtts) != 0 || measured(b.timing):
			t.Errorf("a refusal became a response time: %v, or in the timeout policy", busy.rtts)
		case b.fatal != nil:
			t.Errorf("a refusal ended the fetch: %v", b.fatal)
		}
		if again := b.front.take(nil, 1, "busy", false); len(again) != 0 {
			t.Errorf("the refusing peer gets the hash back while another may ask for it")
		}
		rep := b.reportLocked("scheduler", time.Second, Dropped{})
		if rep.Refused != 1 || rep.Timeouts != 0 || len(rep.Peers) != 1 || rep.Peers[0].Failures != 1 {
			t.Errorf("report: refused %d, timeouts %d, peers %+v", rep.Refused, rep.Timeouts, rep.Peers)
		}
		b.mu.Unlock()

		// The same hash times out at another peer: that one is a timeout,
		// and starts the peer's streak.
		ask(2, "slow").OnFailure(2, "slow", receiver.Timeout)
		b.mu.Lock()
		if b.tally.refused != 1 || b.tally.timeouts != 1 || b.tally.peer("slow").streak != 1 {
			t.Errorf("after a timeout: refused %d, timeouts %d, streak %d", b.tally.refused, b.tally.timeouts, b.tally.peer("slow").streak)
		}
		if tr := b.incompleteLocked(ErrStalled, 0).Since; tr.Refused != 1 || tr.Timeouts != 1 {
			t.Errorf("trouble since the last object: %+v", tr)
		}
		b.mu.Unlock()
	})
}

// TestRunWithARefusingPeer fetches a ledger from an honest peer and a busy
// one that refuses what its queue cannot hold (simnet's OverflowReject,
// reported through Config.Refuse to the scheduler's Refuse). The fetch
// completes with no timeout; every refusal the network made is in the
// report as one, and its hashes were asked again.
func TestRunWithARefusingPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		start := clk.Now()
		s, err := scheduler.New(scheduler.Config{Clock: clk, InlineCallbacks: true})
		if err != nil {
			t.Fatal(err)
		}
		net, err := simnet.New(simnet.Config{
			Ledger:  simLedger,
			Clock:   clk,
			Seed:    3,
			Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = s.Deliver(from, id, r) },
			Refuse:  func(from peer.ID, id peer.RequestID) { _ = s.Refuse(from, id) },
		})
		if err != nil {
			t.Fatal(err)
		}
		profiles := map[peer.ID]simnet.Profile{
			"honest": {Latency: simnet.Fixed(5 * time.Millisecond)},
			// One worker and room for one more: of four requests at once,
			// two are refused.
			"busy": {Latency: simnet.Fixed(2 * time.Millisecond), Service: simnet.Service{Workers: 1,
				PerRequest: 3 * time.Millisecond, QueueLimit: 1, Overflow: simnet.OverflowReject}},
		}
		peers := map[peer.ID]*simnet.Peer{}
		for _, id := range []peer.ID{"busy", "honest"} {
			p, err := net.AddPeer(id, profiles[id])
			if err != nil {
				t.Fatal(err)
			}
			peers[id] = p
			if err := s.Connect(p, 4); err != nil { // a fixed limit: the busy peer keeps being pushed
				t.Fatal(err)
			}
		}
		done := make(chan error, 1)
		var rep Report
		go func() {
			var err error
			rep, err = Run(context.Background(), s, Config{Root: simLedger.Root(), Expected: simLedger.Len(), Clock: clk, Batch: 16})
			done <- err
		}()
		var runErr error
	wait:
		for {
			synctest.Wait()
			select {
			case runErr = <-done:
				break wait
			default:
				clk.Add(time.Millisecond)
			}
		}
		net.Close()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if runErr != nil {
			t.Fatalf("fetch failed after %v: %v", clk.Now().Sub(start), runErr)
		}

		refusals := peers["busy"].Stats().Refusals
		if refusals == 0 {
			t.Fatalf("the busy peer refused nothing: %+v", peers["busy"].Stats())
		}
		if rep.Refused != refusals || s.Stats().Refused != uint64(refusals) {
			t.Errorf("the network refused %d requests; the report counts %d, the scheduler %d", refusals, rep.Refused, s.Stats().Refused)
		}
		if rep.Timeouts != 0 || rep.Objects != simLedger.Len() || rep.Answered+rep.Refused != rep.Requests {
			t.Errorf("report: %s", describe(rep))
		}
		if rep.Retries < rep.Refused {
			t.Errorf("%d requests refused, %d hashes asked again", rep.Refused, rep.Retries)
		}
		for _, p := range rep.Peers {
			if p.ID == "busy" && p.Failures != rep.Refused {
				t.Errorf("the busy peer's failures: %d, want its %d refusals", p.Failures, rep.Refused)
			}
		}
	})
}

func describe(r Report) string {
	return fmt.Sprintf("%d requests, %d answered, %d refused, %d timeouts, %d objects of %d, %d retries",
		r.Requests, r.Answered, r.Refused, r.Timeouts, r.Objects, simLedger.Len(), r.Retries)
}

// Both of fetch's Hosts take refusals through Refuser, as a transport that
// can tell one hands it on.
var (
	_ Refuser = (*scheduler.Scheduler)(nil)
	_ Refuser = (*Peerset)(nil)
)

// TestBothHostsTakeRefusals: a busy peer that refuses what its queue
// cannot hold, its refusals handed to the host through Refuser. Through the
// scheduler and through the peer set the fetch completes with no timeout,
// and the report counts each refusal the network made as one.
func TestBothHostsTakeRefusals(t *testing.T) {
	for _, strategy := range []string{"scheduler", "peerset"} {
		t.Run(strategy, func(t *testing.T) {
			o := runSim(t, sim{
				strategy: strategy,
				channels: 4, // fixed: the busy peer keeps being pushed
				refusals: true,
				seed:     3,
				cfg:      Config{Batch: 16},
				peers: []simnet.Profile{
					{Latency: simnet.Fixed(5 * time.Millisecond)},
					{Latency: simnet.Fixed(2 * time.Millisecond), Service: simnet.Service{Workers: 1,
						PerRequest: 3 * time.Millisecond, QueueLimit: 1, Overflow: simnet.OverflowReject}},
				},
			})
			mustComplete(t, o, nil)
			refusals := o.peers["p01"].Refusals
			if refusals == 0 {
				t.Fatalf("the busy peer refused nothing: %+v", o.peers["p01"])
			}
			if o.rep.Refused != refusals || o.rep.Timeouts != 0 || o.rep.Answered+o.rep.Refused != o.rep.Requests {
				t.Errorf("the network refused %d requests; report: %s", refusals, describe(o.rep))
			}
			for _, p := range o.rep.Peers {
				if p.ID == "p01" && p.Failures != refusals {
					t.Errorf("the busy peer's failures: %d, want its %d refusals", p.Failures, refusals)
				}
			}
		})
	}
}

// recordingPeer is a connection that takes every send and records its ID.
type recordingPeer struct {
	id  peer.ID
	mu  sync.Mutex
	ids []peer.RequestID
}

func (p *recordingPeer) ID() peer.ID { return p.id }

func (p *recordingPeer) Send(id peer.RequestID, _ any) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids = append(p.ids, peer.RequestID(id))
	return nil
}

func (p *recordingPeer) sent() []peer.RequestID {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peer.RequestID(nil), p.ids...)
}

// TestPeersetRefuseIsCheckedLikeDeliver: a refusal is accepted only for a
// pending request of the peer that refuses it, once; it is that request's
// one answer; the hashes go to the other peer of the set; after Run, the
// Peerset takes none.
func TestPeersetRefuseIsCheckedLikeDeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewMock()
		ps, err := NewPeerset(Config{Root: simLedger.Root(), Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		a, b := &recordingPeer{id: "A"}, &recordingPeer{id: "B"}
		for _, p := range []*recordingPeer{a, b} {
			if err := ps.Connect(p, 2); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		type result struct {
			rep Report
			err error
		}
		done := make(chan result, 1)
		go func() {
			rep, err := ps.Run(ctx)
			done <- result{rep, err}
		}()
		synctest.Wait()
		if len(a.sent()) != 1 || len(b.sent()) != 0 {
			t.Fatalf("sent %v to A and %v to B; want the root to A", a.sent(), b.sent())
		}
		root := a.sent()[0]
		for _, c := range []struct {
			from peer.ID
			id   peer.RequestID
			want error
		}{
			{"B", root, receiver.ErrWrongPeer},
			{"A", root + 100, receiver.ErrUnknownRequest},
			{"A", root, nil},
			{"A", root, receiver.ErrDuplicateResponse}, // it has had its one answer
		} {
			if err := ps.Refuse(c.from, c.id); !errors.Is(err, c.want) {
				t.Errorf("Refuse(%s, %d): %v, want %v", c.from, c.id, err, c.want)
			}
		}
		if err := ps.Deliver("A", root, nil); !errors.Is(err, receiver.ErrDuplicateResponse) {
			t.Errorf("a response after the refusal: %v", err)
		}
		if len(b.sent()) != 1 || len(a.sent()) != 1 {
			t.Errorf("after the refusal, sent %v to A and %v to B; want the root asked again of B", a.sent(), b.sent())
		}

		cancel()
		r := <-done
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Run: %v", r.err)
		}
		d := r.rep.Dropped
		if r.rep.Refused != 1 || r.rep.Timeouts != 0 || d.Duplicate != 2 || d.WrongPeer != 1 || d.Unknown != 1 {
			t.Errorf("report: refused %d, timeouts %d, dropped %+v", r.rep.Refused, r.rep.Timeouts, d)
		}
		if err := ps.Refuse("B", b.sent()[0]); !errors.Is(err, ErrPeersetStopped) {
			t.Errorf("Refuse after Run: %v", err)
		}
	})
}

package simnet

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

const ms = time.Millisecond

func TestFixedLatencyExact(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(30 * ms)})
		reqs := map[peer.RequestID]ledger.GetObjects{}
		for id := uint64(1); id <= 3; id++ {
			reqs[peer.RequestID(id)] = h.send(p, id, int(id))
		}
		h.advance(30*ms - 1)
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("delivered before the latency: %v", recs)
		}
		h.advance(1)
		recs := h.records()
		if len(recs) != 3 {
			t.Fatalf("got %v", recs)
		}
		for i, r := range recs {
			if r.at != 30*ms || r.from != "a" || r.id != peer.RequestID(i+1) {
				t.Errorf("record %d: %v; want id %d from a at 30ms, in send order", i, r, i+1)
			}
			checkHonest(t, reqs[r.id], r.msg)
		}
		st := p.Stats()
		if st.Requests != 3 || st.Answers != 3 || st.Delivered != 3 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestSendNeverDelivers: even with no latency, a response comes from the
// network's timer, never from inside Send.
func TestSendNeverDelivers(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{})
		h.send(p, 1, 1)
		synctest.Wait()
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("delivered from inside Send: %v", recs)
		}
		h.advance(0) // the mock runs timers due now only when asked
		recs := h.records()
		if len(recs) != 1 || recs[0].at != 0 {
			t.Fatalf("got %v", recs)
		}
		// Also from inside a callback: a zero-latency request sent from
		// Deliver is answered by the next turn of the drain, not by Send.
		h.onDeliver = func(r record) {
			if r.id == 2 {
				h.send(p, 3, 1)
				if recs := h.records(); len(recs) != 1 || recs[0].id != 2 {
					t.Errorf("inside Deliver, after Send: %v", recs)
				}
			}
		}
		h.send(p, 2, 1)
		synctest.Wait()
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("delivered from inside Send: %v", recs)
		}
		h.advance(0)
		if recs := h.records(); len(recs) != 1 || recs[0].id != 3 {
			t.Fatalf("got %v", recs)
		}
	})
}

func TestUniformLatencyWithinBounds(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		// Limits off: thousands of requests at one instant would fill the
		// send queue (resource.DropSendQueue); this test is about the
		// draws, not politeness.
		p := h.addPeer("a", Profile{Latency: Uniform(10*ms, 20*ms), LimitsOff: true})
		for id := uint64(1); id <= 200; id++ {
			h.send(p, id, 1)
		}
		h.advance(time.Second)
		ds := delays(t, h.records())
		if len(ds) != 200 {
			t.Fatalf("%d deliveries", len(ds))
		}
		if !slices.IsSorted(ds) {
			t.Error("deliveries out of time order")
		}
		if ds[0] < 10*ms || ds[len(ds)-1] > 20*ms {
			t.Errorf("delays span [%v, %v], outside [10ms, 20ms]", ds[0], ds[len(ds)-1])
		}
		if ds[0] > 11*ms || ds[len(ds)-1] < 19*ms {
			t.Errorf("delays span only [%v, %v] of [10ms, 20ms]", ds[0], ds[len(ds)-1])
		}
	})
}

func TestLogNormalLatencyTail(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		// Limits off: thousands of requests at one instant would fill the
		// send queue (resource.DropSendQueue); this test is about the
		// draws, not politeness.
		p := h.addPeer("a", Profile{Latency: LogNormal(10*ms, 1), LimitsOff: true})
		const n = 2000
		for id := uint64(1); id <= n; id++ {
			h.send(p, id, 1)
		}
		h.advance(MaxLatency)
		ds := delays(t, h.records())
		if len(ds) != n {
			t.Fatalf("%d deliveries", len(ds))
		}
		mid, p99, top := ds[n/2], ds[n*99/100], ds[n-1]
		if mid < 8*ms || mid > 12*ms {
			t.Errorf("median delay %v, want about 10ms", mid)
		}
		// e^2.33 ≈ 10: the 99th percentile of a sigma-1 log-normal is ten
		// medians out, where a uniform or normal spread would never reach.
		if p99 < 70*ms || top < 150*ms {
			t.Errorf("tail too light: p99 %v, max %v", p99, top)
		}
	})
}

func TestLossCounts(t *testing.T) {
	run := func(seed uint64) (lost, delivered int) {
		bubble(t, func(t *testing.T) {
			h := newHarness(t, seed)
			// Limits off: this test is about the loss draws, not
			// politeness (see TestFaultMix).
			p := h.addPeer("a", Profile{Latency: Fixed(ms), Loss: 0.25, LimitsOff: true})
			for id := uint64(1); id <= 1000; id++ {
				h.send(p, id, 1)
			}
			h.advance(time.Second)
			delivered = len(h.records())
			st := p.Stats()
			lost = st.Lost
			if st.Lost+st.Delivered != 1000 || st.Delivered != delivered {
				t.Errorf("stats %+v with %d delivered", st, delivered)
			}
		})
		return lost, delivered
	}
	lost, _ := run(7)
	if lost < 200 || lost > 300 {
		t.Errorf("lost %d of 1000 at rate 0.25", lost)
	}
	// The exact count for this seed: a change means the random stream of
	// a peer changed, and with it every recorded run. Update deliberately.
	if lost != goldenLost7 {
		t.Errorf("seed 7 lost %d, recorded %d", lost, goldenLost7)
	}
	if again, _ := run(7); again != lost {
		t.Errorf("same seed lost %d then %d", lost, again)
	}
	if other, _ := run(8); other == lost {
		t.Errorf("seeds 7 and 8 both lost %d", lost)
	}
}

const goldenLost7 = 250

func TestBandwidthSerializes(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		const bw = 1_000_000 // bytes per second: one microsecond per byte
		p := h.addPeer("a", Profile{Latency: Fixed(10 * ms), Bandwidth: bw})
		// Three responses queue on the link in send order; each occupies
		// it for its wire size: the 6-byte frame header and the
		// TMGetObjectByHash reply, whose type, query flag and seq (below
		// 128) take two bytes each, and each object a tag and a length
		// around its hash (tag, length, 32 bytes) and its data (tag,
		// length, bytes).
		var want []time.Duration
		linkFree := 10 * ms
		for id := uint64(1); id <= 3; id++ {
			req := h.send(p, id, int(id))
			size := 6 + 2 + 2 + 2
			for _, hh := range req.Hashes {
				data, _ := testLedger.Get(hh)
				obj := 2 + 32 + 1 + protowire.SizeVarint(uint64(len(data))) + len(data)
				size += 1 + protowire.SizeVarint(uint64(obj)) + obj
			}
			linkFree += time.Duration(size) * time.Microsecond
			want = append(want, linkFree)
		}
		h.advance(time.Second)
		if got := delays(t, h.records()); !slices.Equal(got, want) {
			t.Fatalf("arrivals %v, want %v", got, want)
		}
		// Once the link is idle, a response waits only for itself: an
		// empty reply is its header and three two-byte fields.
		h.send(p, 4, 0)
		start := h.now()
		h.advance(time.Second)
		got := delays(t, h.records())
		if want := start + 10*ms + 12*time.Microsecond; len(got) != 1 || got[0] != want {
			t.Fatalf("arrival %v, want %v", got, want)
		}
	})
}

func TestSlownessSchedule(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{
			Latency:  Fixed(10 * ms),
			Slowness: []Slowdown{{At: 100 * ms, Factor: 3}, {At: 200 * ms, Factor: 0.5}},
		})
		sendAt := []time.Duration{0, 99 * ms, 100 * ms, 199 * ms, 200 * ms}
		wantAt := []time.Duration{10 * ms, 109 * ms, 130 * ms, 229 * ms, 205 * ms}
		for i, at := range sendAt {
			h.advance(at - h.now())
			h.send(p, uint64(i+1), 1)
		}
		h.advance(time.Second)
		recs := h.records()
		got := map[peer.RequestID]time.Duration{}
		for _, r := range recs {
			got[r.id] = r.at
		}
		for i, want := range wantAt {
			if got[peer.RequestID(i+1)] != want {
				t.Errorf("request sent at %v arrived at %v, want %v", sendAt[i], got[peer.RequestID(i+1)], want)
			}
		}
	})
}

func TestScheduledOutage(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{
			Latency: Fixed(20 * ms),
			Outages: []Outage{{At: 50 * ms, For: 100 * ms}, {At: 300 * ms}},
		})
		h.advance(40 * ms)
		h.send(p, 1, 1) // due at 60ms, after the peer goes down
		h.advance(10 * ms)
		recs := h.records()
		if len(recs) != 1 || recs[0].kind != "down" || recs[0].at != 50*ms || recs[0].from != "a" {
			t.Fatalf("at 50ms: %v", recs)
		}
		if p.Connected() {
			t.Error("connected after OnDisconnect")
		}
		h.advance(10 * ms)
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("a response from before the outage arrived: %v", recs)
		}
		if err := p.Send(2, request(0, 1)); !errors.Is(err, ErrDisconnected) {
			t.Fatalf("send while down: %v", err)
		}
		h.advance(90 * ms)
		recs = h.records()
		if len(recs) != 1 || recs[0].kind != "up" || recs[0].at != 150*ms {
			t.Fatalf("at 150ms: %v", recs)
		}
		if !p.Connected() {
			t.Error("not connected after OnReconnect")
		}
		h.send(p, 3, 1)
		h.advance(20 * ms)
		recs = h.records()
		if len(recs) != 1 || recs[0].kind != "deliver" || recs[0].id != 3 || recs[0].at != 170*ms {
			t.Fatalf("after reconnecting: %v", recs)
		}
		h.advance(time.Hour)
		recs = h.records()
		if len(recs) != 1 || recs[0].kind != "down" || recs[0].at != 300*ms {
			t.Fatalf("the last outage: %v", recs)
		}
		st := p.Stats()
		if st.Disconnects != 2 || st.Reconnects != 1 || st.Dropped != 1 || st.Refused != 1 || st.Delivered != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestResponsesDoNotSurviveReconnect: a response in flight when the peer
// went down is lost with that connection, even if it would arrive after the
// peer is back.
func TestResponsesDoNotSurviveReconnect(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(30 * ms), Outages: []Outage{{At: 50 * ms, For: 10 * ms}}})
		h.advance(40 * ms)
		h.send(p, 1, 1) // due at 70ms; the peer is down from 50ms to 60ms
		h.advance(15 * ms)
		if err := p.Send(2, request(2, 1)); !errors.Is(err, ErrDisconnected) {
			t.Fatalf("send while down: %v", err)
		}
		h.advance(5 * ms)
		h.send(p, 3, 1) // due at 90ms, on the new connection
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, fmt.Sprintf("%v %s %d", r.at, r.kind, r.id))
		}
		want := []string{"50ms down 0", "60ms up 0", "90ms deliver 3"}
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
		if st := p.Stats(); st.Dropped != 1 || st.Refused != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestRandomOutages(t *testing.T) {
	run := func(seed uint64) []record {
		var recs []record
		bubble(t, func(t *testing.T) {
			h := newHarness(t, seed)
			p := h.addPeer("a", Profile{RandomOutages: &RandomOutages{MeanUp: time.Second, MeanDown: 100 * ms}})
			h.advance(100 * time.Second)
			recs = h.records()
			want := "down"
			for _, r := range recs {
				if r.kind != want {
					t.Fatalf("%v: expected %s next", r, want)
				}
				want = map[string]string{"down": "up", "up": "down"}[want]
			}
			st := p.Stats()
			if st.Disconnects < 60 || st.Disconnects > 120 {
				t.Errorf("%d disconnections in 100s with 1.1s cycles", st.Disconnects)
			}
			if p.Connected() != (want == "down") {
				t.Errorf("Connected() = %v after the last hook %v", p.Connected(), recs[len(recs)-1])
			}
		})
		return recs
	}
	a, b, c := run(1), run(1), run(2)
	if !slices.Equal(a, b) {
		t.Error("same seed, different outages")
	}
	if slices.Equal(a, c) {
		t.Error("different seeds, same outages")
	}
}

// TestOutagesIgnoreTraffic: a peer's random outages do not move when the
// traffic it is sent changes, so a scenario's outages stay put while the
// code under test evolves.
func TestOutagesIgnoreTraffic(t *testing.T) {
	run := func(requests int) []record {
		var downs []record
		bubble(t, func(t *testing.T) {
			h := newHarness(t, 5)
			p := h.addPeer("a", Profile{Latency: Uniform(0, 10*ms), Loss: 0.5, RandomOutages: &RandomOutages{MeanUp: time.Second, MeanDown: time.Second}})
			for i := range requests {
				_ = p.Send(peer.RequestID(i+1), request(i, 1))
			}
			h.advance(20 * time.Second)
			for _, r := range h.records() {
				if r.kind != "deliver" {
					downs = append(downs, r)
				}
			}
		})
		return downs
	}
	if a, b := run(0), run(100); !slices.Equal(a, b) {
		t.Errorf("outages moved with traffic:\n%v\n%v", a, b)
	}
}

func TestMissing(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		all := h.addPeer("all", Profile{Missing: 1})
		half := h.addPeer("half", Profile{Missing: 0.5})
		req := h.send(all, 1, 10)
		h.send(half, 2, 200)
		h.advance(0)
		recs := h.records()
		if len(recs) != 2 {
			t.Fatalf("got %v", recs)
		}
		if items := recs[0].msg.(ledger.Objects).Items; len(items) != 0 {
			t.Errorf("items %+v, want all %d left out", items, len(req.Hashes))
		}
		items := recs[1].msg.(ledger.Objects).Items
		missing := 200 - len(items)
		for _, it := range items {
			if !ledger.Verify(it.Hash, it.Data) {
				t.Errorf("present item %s does not verify", it.Hash)
			}
		}
		if missing < 70 || missing > 130 {
			t.Errorf("%d of 200 missing at rate 0.5", missing)
		}
		if all.Stats().Missing != 10 || half.Stats().Missing != missing {
			t.Errorf("stats %+v %+v", all.Stats(), half.Stats())
		}
	})
}

func TestNotificationsIgnored(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{})
		if err := p.Send(0, "anything at all"); err != nil {
			t.Fatal(err)
		}
		h.advance(time.Second)
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("a notification was answered: %v", recs)
		}
		if st := p.Stats(); st.Notifications != 1 || st.Requests != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestSendErrors(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{})
		for _, msg := range []any{"text", nil, (*ledger.GetObjects)(nil), (*ledger.Objects)(nil)} {
			if err := p.Send(1, msg); !errors.Is(err, ErrUnsupported) {
				t.Errorf("Send(%T): %v", msg, err)
			}
		}
		req := request(0, 2)
		if err := p.Send(9, &req); err != nil {
			t.Errorf("Send(*GetObjects): %v", err)
		}
		h.advance(0)
		recs := h.records()
		if len(recs) != 1 || recs[0].id != 9 {
			t.Fatalf("got %v", recs)
		}
		checkHonest(t, req, recs[0].msg)
		if st := p.Stats(); st.Refused != 4 || st.Requests != 1 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestCloseStopsEverything(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(10 * ms), RandomOutages: &RandomOutages{MeanUp: ms, MeanDown: ms}})
		h.send(p, 1, 1)
		h.net.Close()
		h.net.Close()
		h.advance(time.Hour)
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("callbacks after Close: %v", recs)
		}
		if err := p.Send(2, request(0, 1)); !errors.Is(err, ErrClosed) {
			t.Errorf("Send after Close: %v", err)
		}
		if _, err := h.net.AddPeer("b", Profile{}); !errors.Is(err, ErrClosed) {
			t.Errorf("AddPeer after Close: %v", err)
		}
	})
}

// TestCloseFromCallback: a host may close the network from inside Deliver;
// the responses due at the same instant are then not delivered.
func TestCloseFromCallback(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(10 * ms)})
		h.onDeliver = func(record) { h.net.Close() }
		h.send(p, 1, 1)
		h.send(p, 2, 1)
		h.advance(time.Second)
		if recs := h.records(); len(recs) != 1 || recs[0].id != 1 {
			t.Fatalf("got %v", recs)
		}
	})
}

// TestReentrantSend: the host may send from inside Deliver (as a scheduler
// does when a channel reopens); those requests are answered in turn.
func TestReentrantSend(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(10 * ms)})
		next := uint64(1)
		h.onDeliver = func(r record) {
			if next < 5 {
				next++
				if err := p.Send(peer.RequestID(next), request(int(next), 1)); err != nil {
					t.Error(err)
				}
			}
		}
		h.send(p, 1, 1)
		h.advance(time.Second)
		ds := delays(t, h.records())
		if !slices.Equal(ds, []time.Duration{10 * ms, 20 * ms, 30 * ms, 40 * ms, 50 * ms}) {
			t.Fatalf("got %v", ds)
		}
	})
}

func TestAddPeerErrors(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		h.addPeer("a", Profile{})
		if _, err := h.net.AddPeer("a", Profile{}); !errors.Is(err, ErrDuplicatePeer) {
			t.Errorf("duplicate: %v", err)
		}
		if _, err := h.net.AddPeer("b", Profile{Loss: 2}); !errors.Is(err, ErrBadProfile) {
			t.Errorf("bad profile: %v", err)
		}
		if _, ok := h.net.Peer("b"); ok {
			t.Error("a refused peer was added")
		}
		if p, ok := h.net.Peer("a"); !ok || p.ID() != "a" {
			t.Error("Peer(a)")
		}
		if ps := h.net.Peers(); len(ps) != 1 || ps[0].ID() != "a" {
			t.Errorf("Peers() = %v", ps)
		}
	})
}

func TestNewErrors(t *testing.T) {
	deliver := func(peer.ID, peer.RequestID, any) {}
	for _, cfg := range []Config{{}, {Ledger: testLedger}, {Deliver: deliver}} {
		if _, err := New(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%+v): %v", cfg, err)
		}
	}
}

// TestRealClockDefault: with no Clock the network uses the real one, which
// inside a synctest bubble runs on the bubble's virtual time.
func TestRealClockDefault(t *testing.T) {
	bubble(t, func(t *testing.T) {
		got := make(chan time.Duration, 1)
		start := time.Now()
		net, err := New(Config{Ledger: testLedger, Deliver: func(peer.ID, peer.RequestID, any) {
			got <- time.Since(start)
		}})
		if err != nil {
			t.Fatal(err)
		}
		defer net.Close()
		p, err := net.AddPeer("a", Profile{Latency: Fixed(30 * ms)})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Send(1, request(0, 1)); err != nil {
			t.Fatal(err)
		}
		if d := <-got; d != 30*ms {
			t.Fatalf("delivered after %v, want 30ms", d)
		}
	})
}

var _ clock.Clock = (*clock.Mock)(nil)

// TestBandwidthChargesWideIDs: a request ID above rippled's 32-bit seq (a
// scheduler without Config.RequestIDs issues them once a slot is reused)
// costs its response the same link time as the ID the wire would carry.
func TestBandwidthChargesWideIDs(t *testing.T) {
	arrival := func(id uint64) time.Duration {
		var got []time.Duration
		bubble(t, func(t *testing.T) {
			h := newHarness(t, 1)
			p := h.addPeer("a", Profile{Latency: Fixed(10 * ms), Bandwidth: 1000})
			if err := p.Send(peer.RequestID(id), request(1, 3)); err != nil { // the same objects whatever the ID
				t.Fatal(err)
			}
			h.advance(time.Minute)
			got = delays(t, h.records())
		})
		if len(got) != 1 {
			t.Fatalf("id %#x: arrivals %v", id, got)
		}
		return got[0]
	}
	narrow, wide := arrival(1), arrival(1<<32|1)
	if narrow <= 10*ms || wide != narrow {
		t.Fatalf("arrival with id 1 at %v, with id 1<<32|1 at %v: want the same, after the latency", narrow, wide)
	}
}

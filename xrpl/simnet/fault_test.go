package simnet

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// faulty runs n requests (ids 1..n, k hashes each, sent at time 0) to a peer
// that always commits fault f, and returns what the host saw and the peer's
// stats.
func faulty(t *testing.T, f Fault, n, k int) ([]record, []ledger.GetObjects, Stats) {
	var recs []record
	var reqs []ledger.GetObjects
	var st Stats
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		rates := FaultRates{}
		rates[f] = 1
		p := h.addPeer("a", Profile{Latency: Fixed(10 * ms), Faults: rates})
		for id := 1; id <= n; id++ {
			reqs = append(reqs, h.send(p, uint64(id), k))
		}
		h.advance(time.Hour)
		recs = h.records()
		st = p.Stats()
	})
	if st.Faults[f] != n {
		t.Errorf("Faults[%v] = %d, want %d", f, st.Faults[f], n)
	}
	return recs, reqs, st
}

func TestFaultWrongID(t *testing.T) {
	recs, reqs, _ := faulty(t, WrongID, 3, 2)
	// Request 1 has no predecessor and goes out as 2; the others go out
	// under the request before them. The content stays each request's own.
	wantIDs := []peer.RequestID{2, 1, 2}
	for i, r := range recs {
		if r.id != wantIDs[i] {
			t.Errorf("answer to request %d came as %d, want %d", i+1, r.id, wantIDs[i])
		}
		checkHonest(t, reqs[i], r.msg)
	}
	if len(recs) != 3 {
		t.Fatalf("got %v", recs)
	}
}

func TestFaultDuplicate(t *testing.T) {
	recs, reqs, st := faulty(t, Duplicate, 3, 1)
	if len(recs) != 6 || st.Answers != 6 || st.Delivered != 6 {
		t.Fatalf("got %v, stats %+v", recs, st)
	}
	seen := map[peer.RequestID][]time.Duration{}
	for _, r := range recs {
		seen[r.id] = append(seen[r.id], r.at)
		checkHonest(t, reqs[r.id-1], r.msg)
	}
	for id, at := range seen {
		if len(at) != 2 || at[0] != 10*ms || at[1] != 20*ms {
			t.Errorf("request %d answered at %v, want 10ms and again 10ms later", id, at)
		}
	}
}

func TestFaultLate(t *testing.T) {
	recs, reqs, _ := faulty(t, Late, 2, 1)
	if len(recs) != 2 {
		t.Fatalf("got %v", recs)
	}
	for i, r := range recs {
		if r.at != 10*ms+DefaultLateBy || r.id != peer.RequestID(i+1) {
			t.Errorf("%v: want id %d at 10ms+%v", r, i+1, DefaultLateBy)
		}
		checkHonest(t, reqs[i], r.msg)
	}

	// LateBy overrides the default.
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(10 * ms), Faults: FaultRates{Late: 1}, LateBy: time.Minute})
		h.send(p, 1, 1)
		h.advance(time.Hour)
		if recs := h.records(); len(recs) != 1 || recs[0].at != 10*ms+time.Minute {
			t.Fatalf("got %v", recs)
		}
	})
}

func TestFaultUnknownID(t *testing.T) {
	recs, reqs, _ := faulty(t, UnknownID, 20, 1)
	if len(recs) != 20 {
		t.Fatalf("got %d records", len(recs))
	}
	ids := map[peer.RequestID]bool{}
	for i, r := range recs {
		if r.id>>63 != 1 {
			t.Errorf("answer %d under id %#x, which a scheduler could have issued", i, r.id)
		}
		ids[r.id] = true
		checkHonest(t, reqs[i], r.msg)
	}
	if len(ids) != 20 {
		t.Errorf("only %d distinct unknown IDs", len(ids))
	}
}

func TestFaultWrongType(t *testing.T) {
	recs, reqs, _ := faulty(t, WrongType, 2, 3)
	if len(recs) != 2 {
		t.Fatalf("got %v", recs)
	}
	for i, r := range recs {
		got, ok := r.msg.(ledger.GetObjects)
		if !ok || !slices.Equal(got.Hashes, reqs[i].Hashes) || r.id != peer.RequestID(i+1) {
			t.Errorf("%v: want the request echoed under id %d", r, i+1)
		}
	}
}

func TestFaultIgnore(t *testing.T) {
	recs, _, st := faulty(t, Ignore, 5, 1)
	if len(recs) != 0 || st.Answers != 0 {
		t.Fatalf("an ignoring peer answered: %v", recs)
	}
}

func TestFaultCorrupt(t *testing.T) {
	recs, reqs, _ := faulty(t, Corrupt, 10, 4)
	if len(recs) != 10 {
		t.Fatalf("got %v", recs)
	}
	for i, r := range recs {
		resp := r.msg.(ledger.Objects)
		bad := 0
		for j, it := range resp.Items {
			if it.Hash != reqs[i].Hashes[j] {
				t.Fatalf("item %d of %d changed its hash or presence", j, i)
			}
			if !ledger.Verify(it.Hash, it.Data) {
				bad++
			}
		}
		if bad != 1 {
			t.Errorf("response %d has %d corrupt objects, want 1", i+1, bad)
		}
	}
	// The ledger itself is untouched.
	for _, req := range reqs {
		for _, h := range req.Hashes {
			if data, ok := testLedger.Get(h); !ok || !ledger.Verify(h, data) {
				t.Fatalf("ledger node %s damaged", h)
			}
		}
	}
}

// TestFaultCorruptNothingPresent: with nothing to corrupt, the answer goes
// out as it is and the fault is not counted.
func TestFaultCorruptNothingPresent(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Missing: 1, Faults: FaultRates{Corrupt: 1}})
		h.send(p, 1, 3)
		h.advance(0)
		recs := h.records()
		if len(recs) != 1 {
			t.Fatalf("got %v", recs)
		}
		if items := recs[0].msg.(ledger.Objects).Items; len(items) != 0 {
			t.Errorf("items %+v, want every one left out", items)
		}
		if st := p.Stats(); st.Faults[Corrupt] != 0 {
			t.Errorf("counted a corruption of nothing: %+v", st)
		}
	})
}

// TestFaultMix: rates split the requests between faults roughly in
// proportion, and the stats account for every request.
func TestFaultMix(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 3)
		var rates FaultRates
		for f := range rates {
			rates[f] = 0.1
		}
		// Limits off: thousands of requests at one instant would fill the
		// send queue (resource.DropSendQueue); this test is about the
		// draws, not politeness.
		p := h.addPeer("a", Profile{Latency: Fixed(ms), Faults: rates, LimitsOff: true})
		const n = 3000
		for id := 1; id <= n; id++ {
			h.send(p, uint64(id), 1)
		}
		h.advance(time.Hour)
		recs := h.records()
		st := p.Stats()
		total := 0
		for f, c := range st.Faults {
			total += c
			if c < 220 || c > 380 {
				t.Errorf("%v: %d of %d at rate 0.1", Fault(f), c, n)
			}
		}
		if total < 1900 || total > 2300 {
			t.Errorf("%d faults of %d requests at a total rate of 0.7", total, n)
		}
		// Ignore sends nothing and Duplicate sends two.
		if want := n - st.Faults[Ignore] + st.Faults[Duplicate]; st.Answers != want || len(recs) != want {
			t.Errorf("%d answers, %d delivered, want %d", st.Answers, len(recs), want)
		}
	})
}

// transcript runs a busy scenario (four peers with every kind of trouble, a
// host that keeps each connected peer loaded with 4 requests in flight and
// tops them up on a tick) and returns every callback as text, and how many
// callbacks showed each kind of trouble.
func transcript(t *testing.T, seed uint64) (lines []string, seen map[string]int) {
	seen = map[string]int{}
	bubble(t, func(t *testing.T) {
		h := newHarness(t, seed)
		profiles := map[string]Profile{
			"steady": {Latency: Uniform(5*ms, 15*ms), Bandwidth: 200_000},
			"heavy":  {Latency: LogNormal(20*ms, 1.2), Loss: 0.1, Missing: 0.1},
			"flaky":  {Latency: Fixed(8 * ms), RandomOutages: &RandomOutages{MeanUp: 300 * ms, MeanDown: 100 * ms}},
			"rogue": {
				Latency:  Uniform(ms, 30*ms),
				Faults:   FaultRates{WrongID: 0.05, Duplicate: 0.05, Late: 0.05, UnknownID: 0.05, WrongType: 0.05, Ignore: 0.05, Corrupt: 0.05},
				LateBy:   time.Second,
				Slowness: []Slowdown{{At: 500 * ms, Factor: 4}},
			},
		}
		var peers []*Peer
		for _, name := range []string{"steady", "heavy", "flaky", "rogue"} {
			peers = append(peers, h.addPeer(peerID(name), profiles[name]))
		}
		nextID := uint64(0)
		sendTo := func(p *Peer) {
			nextID++
			_ = p.Send(peer.RequestID(nextID), request(int(nextID*7), 1+int(nextID%5)))
		}
		h.onDeliver = func(r record) {
			if p, ok := h.net.Peer(r.from); ok {
				sendTo(p)
			}
		}
		for _, p := range peers {
			for range 4 {
				sendTo(p)
			}
		}
		// Lost and ignored requests would starve a peer; top them up on a
		// tick, as a scheduler's timeouts would.
		for range 20 {
			h.advance(100 * ms)
			for _, p := range peers {
				if p.Connected() {
					sendTo(p)
				}
			}
		}
		h.advance(2 * time.Second)
		for _, r := range h.records() {
			lines = append(lines, r.String())
			seen[r.kind]++
			if r.id>>63 == 1 {
				seen["unknown id"]++
			}
			switch m := r.msg.(type) {
			case ledger.GetObjects:
				seen["wrong type"]++
			case ledger.Objects:
				for _, it := range m.Items {
					if !ledger.Verify(it.Hash, it.Data) {
						seen["corrupt"]++
					}
				}
			}
		}
		for _, p := range peers {
			lines = append(lines, fmt.Sprintf("%s %+v", p.ID(), p.Stats()))
			seen["missing"] += p.Stats().Missing
		}
	})
	return lines, seen
}

func TestSameSeedSameTranscript(t *testing.T) {
	a, seen := transcript(t, 1)
	b, _ := transcript(t, 1)
	if !slices.Equal(a, b) {
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("runs diverge at line %d:\n%s\n%s", i, a[i], b[i])
			}
		}
		t.Fatalf("runs have %d and %d lines", len(a), len(b))
	}
	// The scenario exercises what it claims to.
	for _, kind := range []string{"deliver", "down", "up", "unknown id", "wrong type", "missing", "corrupt"} {
		if seen[kind] == 0 {
			t.Errorf("no %s in the transcript", kind)
		}
	}
	if seen["deliver"] < 500 {
		t.Errorf("only %d deliveries", seen["deliver"])
	}
	if c, _ := transcript(t, 2); slices.Equal(a, c) {
		t.Error("seeds 1 and 2 gave the same transcript")
	}
}

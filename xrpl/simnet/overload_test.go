package simnet

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// Tests of Profile.Service in virtual time: exact instants of every answer.

func checkQueueDelays(t *testing.T, p *Peer, want ...time.Duration) {
	t.Helper()
	if got := p.QueueDelays(); !slices.Equal(got, want) {
		t.Fatalf("queue delays %v, want %v", got, want)
	}
}

func TestServiceQueuesRequestsFIFO(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Latency: Fixed(5 * ms), Service: Service{Workers: 1, PerRequest: 10 * ms}})
		reqs := map[peer.RequestID]ledger.GetObjects{}
		for id := uint64(1); id <= 3; id++ {
			reqs[peer.RequestID(id)] = h.send(p, id, 2)
		}
		h.advance(time.Second)
		recs := h.records()
		if got := delays(t, recs); !slices.Equal(got, []time.Duration{15 * ms, 25 * ms, 35 * ms}) {
			t.Fatalf("answers at %v, want 15ms 25ms 35ms: service 10ms each, one at a time, then 5ms of latency", got)
		}
		for i, r := range recs {
			if r.id != peer.RequestID(i+1) {
				t.Errorf("answer %d is to %d", i, r.id)
			}
			checkHonest(t, reqs[r.id], r.msg)
		}
		checkQueueDelays(t, p, 0, 10*ms, 20*ms)
		st := p.Stats()
		if st.Served != 3 || st.Overflowed != 0 || st.QueueDelay != 30*ms || st.MaxQueueDelay != 20*ms || st.Delivered != 3 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestServiceWorkersAndObjects(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Service: Service{Workers: 2, PerObject: 2 * ms}})
		h.send(p, 1, 1) // worker A, 0–2ms
		h.send(p, 2, 3) // worker B, 0–6ms
		h.send(p, 3, 2) // A again, 2–6ms
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, fmt.Sprintf("%d@%v", r.id, r.at))
		}
		if want := []string{"1@2ms", "2@6ms", "3@6ms"}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		checkQueueDelays(t, p, 0, 0, 2*ms)
	})
}

func TestServiceOverflowDrops(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Service: Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1}})
		for id := uint64(1); id <= 4; id++ {
			h.send(p, id, 1) // 1 is served, 2 waits, 3 and 4 find the queue full
		}
		h.advance(10 * ms)
		h.send(p, 5, 1) // 2 started at 10ms: room again
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, fmt.Sprintf("%d@%v", r.id, r.at))
		}
		if want := []string{"1@10ms", "2@20ms", "5@30ms"}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		checkQueueDelays(t, p, 0, 10*ms, 10*ms)
		st := p.Stats()
		if st.Requests != 5 || st.Served != 3 || st.Overflowed != 2 || st.Answers != 3 || st.Missing != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestServiceOverflowRejects(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{
			Latency: Fixed(5 * ms),
			Service: Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1, Overflow: OverflowReject},
		})
		reqs := map[peer.RequestID]ledger.GetObjects{}
		for id := uint64(1); id <= 4; id++ {
			reqs[peer.RequestID(id)] = h.send(p, id, 3)
		}
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, fmt.Sprintf("%d@%v", r.id, r.at))
			resp := r.msg.(ledger.Objects)
			if r.id == 3 || r.id == 4 {
				// Rejected: every object missing (left out of the reply),
				// after the latency alone.
				if len(resp.Items) != 0 {
					t.Errorf("rejection %d has %d items", r.id, len(resp.Items))
				}
			} else {
				checkHonest(t, reqs[r.id], r.msg)
			}
		}
		if want := []string{"3@5ms", "4@5ms", "1@15ms", "2@25ms"}; !slices.Equal(got, want) {
			t.Fatalf("answers %v, want %v", got, want)
		}
		checkQueueDelays(t, p, 0, 10*ms)
		st := p.Stats()
		if st.Served != 2 || st.Overflowed != 2 || st.Answers != 4 || st.Missing != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceOverflowRefusesThroughRefuse: with Config.Refuse set, the
// requests a full queue turns away are refused through it, at the instant
// their empty answers would have come; the others are answered as before.
func TestServiceOverflowRefusesThroughRefuse(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarnessWith(t, 1, true)
		p := h.addPeer("a", Profile{
			Latency: Fixed(5 * ms),
			Service: Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1, Overflow: OverflowReject},
		})
		reqs := map[peer.RequestID]ledger.GetObjects{}
		for id := uint64(1); id <= 4; id++ {
			reqs[peer.RequestID(id)] = h.send(p, id, 3)
		}
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, fmt.Sprintf("%s %d@%v", r.kind, r.id, r.at))
			if r.kind == "deliver" {
				checkHonest(t, reqs[r.id], r.msg)
			}
		}
		if want := []string{"refuse 3@5ms", "refuse 4@5ms", "deliver 1@15ms", "deliver 2@25ms"}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		checkQueueDelays(t, p, 0, 10*ms)
		st := p.Stats()
		if st.Served != 2 || st.Overflowed != 2 || st.Answers != 4 || st.Delivered != 4 || st.Refusals != 2 || st.Missing != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceRefusalsComeWhenRejectionsWould: the same seed, with random
// latency, a slow uplink and an overloaded peer, refuses through Refuse
// exactly the requests it otherwise answers empty, at the same instants,
// and answers the rest identically: a refusal takes the uplink as the empty
// answer does, and draws nothing more.
func TestServiceRefusalsComeWhenRejectionsWould(t *testing.T) {
	run := func(refusals bool) (lines []string, st Stats) {
		bubble(t, func(t *testing.T) {
			h := newHarnessWith(t, 7, refusals)
			p := h.addPeer("a", Profile{
				Latency:   LogNormal(5*ms, 0.5),
				Bandwidth: 200_000,
				Service:   Service{Workers: 2, PerRequest: 3 * ms, QueueLimit: 2, Overflow: OverflowReject},
			})
			for id := uint64(1); id <= 100; id++ {
				h.send(p, id, 1+int(id%3))
				h.advance(ms)
			}
			h.advance(time.Second)
			for _, r := range h.records() {
				kind := r.kind
				if resp, ok := r.msg.(ledger.Objects); ok && len(resp.Items) == 0 {
					kind = "refuse" // an empty answer is a rejection
				}
				lines = append(lines, fmt.Sprintf("%s %d@%v", kind, r.id, r.at))
			}
			st = p.Stats()
		})
		return lines, st
	}
	answered, plain := run(false)
	refused, withRefuse := run(true)
	if !slices.Equal(answered, refused) {
		t.Fatalf("the runs differ:\nempty answers: %v\nrefusals:      %v", answered, refused)
	}
	if withRefuse.Refusals == 0 || withRefuse.Refusals != withRefuse.Overflowed || plain.Refusals != 0 {
		t.Fatalf("refusals: %d of %d overflowed with Refuse, %d without", withRefuse.Refusals, withRefuse.Overflowed, plain.Refusals)
	}
	plain.Refusals = withRefuse.Refusals
	if plain != withRefuse {
		t.Fatalf("stats differ beyond Refusals:\n%+v\n%+v", plain, withRefuse)
	}
}

// TestServiceRefusalLostWithTheConnection: a refusal on its way when the
// peer goes down is dropped, as a response would be.
func TestServiceRefusalLostWithTheConnection(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarnessWith(t, 1, true)
		p := h.addPeer("a", Profile{
			Latency: Fixed(5 * ms),
			Service: Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1, Overflow: OverflowReject},
			Outages: []Outage{{At: 3 * ms}},
		})
		for id := uint64(1); id <= 3; id++ {
			h.send(p, id, 1) // 3 is refused, due at 5ms
		}
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, r.kind)
		}
		if want := []string{"down"}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		if st := p.Stats(); st.Refusals != 0 || st.Dropped != 3 || st.Overflowed != 1 { // the two answers and the refusal
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceLoadRaisesResponseTime keeps k requests in flight to a peer
// with two workers, 10ms of service and 20ms of latency: it serves 200
// requests a second, so up to 6 in flight (200/s × 30ms) nothing waits, and
// beyond that the response time is k/200 seconds (Little's law), the excess
// spent in the queue. With fixed service times and an even k, every request
// waits the same, so each response shows it exactly.
func TestServiceLoadRaisesResponseTime(t *testing.T) {
	for _, c := range []struct {
		inFlight   int
		rtt, queue time.Duration
	}{
		{1, 30 * ms, 0},
		{6, 30 * ms, 0},
		{8, 40 * ms, 10 * ms},
		{12, 60 * ms, 30 * ms},
		{24, 120 * ms, 90 * ms},
	} {
		bubble(t, func(t *testing.T) {
			h := newHarness(t, 1)
			p := h.addPeer("a", Profile{Latency: Fixed(20 * ms), Service: Service{Workers: 2, PerRequest: 10 * ms}})
			sent := map[peer.RequestID]time.Duration{}
			var rtts []time.Duration
			next := uint64(0)
			send := func() {
				next++
				sent[peer.RequestID(next)] = h.now()
				if err := p.Send(peer.RequestID(next), request(int(next), 1)); err != nil {
					t.Error(err)
				}
			}
			h.onDeliver = func(r record) {
				rtts = append(rtts, r.at-sent[r.id])
				send()
			}
			for range c.inFlight {
				send()
			}
			h.advance(10 * time.Second)
			last := rtts[len(rtts)-1]
			delays := p.QueueDelays()
			if last != c.rtt || delays[len(delays)-1] != c.queue {
				t.Errorf("%d in flight: response time %v, queueing %v; want %v, %v", c.inFlight, last, delays[len(delays)-1], c.rtt, c.queue)
			}
			if throughput := float64(len(rtts)) / 10; c.inFlight >= 6 && throughput < 199 {
				t.Errorf("%d in flight: %.1f answers a second, want 200", c.inFlight, throughput)
			}
		})
	}
}

func TestServiceDisconnectEmptiesQueue(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{
			Service: Service{Workers: 1, PerRequest: 10 * ms},
			Outages: []Outage{{At: 15 * ms, For: 5 * ms}},
		})
		for id := uint64(1); id <= 3; id++ {
			h.send(p, id, 1) // 0–10ms, 10–20ms, 20–30ms
		}
		h.advance(20 * ms) // down at 15ms (2 in service, 3 waiting), up at 20ms
		h.send(p, 4, 1)    // a worker is free at once: 20–30ms
		h.advance(time.Second)
		var got []string
		for _, r := range h.records() {
			got = append(got, fmt.Sprintf("%s %d@%v", r.kind, r.id, r.at))
		}
		if want := []string{"deliver 1@10ms", "down 0@15ms", "up 0@20ms", "deliver 4@30ms"}; !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		checkQueueDelays(t, p, 0, 10*ms, 20*ms, 0)
		if st := p.Stats(); st.Dropped != 2 || st.Served != 4 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestServiceSlowness(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{
			Latency:  Fixed(5 * ms),
			Service:  Service{Workers: 1, PerRequest: 10 * ms},
			Slowness: []Slowdown{{At: 0, Factor: 2}},
		})
		h.send(p, 1, 1)
		h.send(p, 2, 1)
		h.advance(time.Second)
		if got := delays(t, h.records()); !slices.Equal(got, []time.Duration{30 * ms, 50 * ms}) {
			t.Fatalf("answers at %v: service and latency both doubled", got)
		}
		checkQueueDelays(t, p, 0, 20*ms)
	})
}

func TestServiceIgnoredRequestsTakeAWorker(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Service: Service{Workers: 1, PerRequest: 10 * ms}, Faults: FaultRates{Ignore: 1}})
		h.send(p, 1, 1)
		h.send(p, 2, 1)
		h.advance(time.Second)
		if recs := h.records(); len(recs) != 0 {
			t.Fatalf("answers %v", recs)
		}
		checkQueueDelays(t, p, 0, 10*ms)
	})
}

func TestServiceLostRequestsNeverArrive(t *testing.T) {
	bubble(t, func(t *testing.T) {
		h := newHarness(t, 1)
		p := h.addPeer("a", Profile{Loss: 1, Service: Service{Workers: 1, PerRequest: 10 * ms, QueueLimit: 1}})
		for id := uint64(1); id <= 5; id++ {
			h.send(p, id, 1)
		}
		h.advance(time.Second)
		if st := p.Stats(); st.Lost != 5 || st.Served != 0 || st.Overflowed != 0 || len(p.QueueDelays()) != 0 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestServiceSameSeedSameRun: with random latency, loss, missing objects
// and rejections, a seed replays the same answers and the same delays.
func TestServiceSameSeedSameRun(t *testing.T) {
	run := func(seed uint64) (lines []string) {
		bubble(t, func(t *testing.T) {
			h := newHarness(t, seed)
			p := h.addPeer("a", Profile{
				Latency: LogNormal(5*ms, 0.5),
				Loss:    0.1,
				Missing: 0.1,
				Service: Service{Workers: 3, PerRequest: ms, PerObject: ms, QueueLimit: 4, Overflow: OverflowReject},
			})
			for id := uint64(1); id <= 200; id++ {
				h.send(p, id, 1+int(id%5))
				h.advance(ms) // about 4ms of service a request, 3 workers: overloaded
			}
			h.advance(time.Second)
			for _, r := range h.records() {
				lines = append(lines, r.String())
			}
			lines = append(lines, fmt.Sprint(p.QueueDelays()), fmt.Sprintf("%+v", p.Stats()))
			if st := p.Stats(); st.Overflowed == 0 || st.MaxQueueDelay == 0 || st.Lost == 0 {
				t.Errorf("the scenario does not overload the peer: %+v", st)
			}
		})
		return lines
	}
	a, b := run(1), run(1)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two runs")
	}
	if c := run(2); slices.Equal(a, c) {
		t.Fatal("seeds 1 and 2 gave the same run")
	}
}

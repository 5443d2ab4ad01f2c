package tcpnet

import (
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/simnet"
)

const ms = time.Millisecond

// TestServiceQueue drives the queue's arithmetic with exact times: two
// workers, at most two waiting, a millisecond of service per object.
func TestServiceQueue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	q := newServiceQueue(simnet.Service{Workers: 2, PerObject: ms, QueueLimit: 2})
	for i, c := range []struct {
		arrive  time.Duration
		objects int
		full    bool
		ready   time.Duration // after arrival
		waiting int           // after the arrival
	}{
		{arrive: 0, objects: 10, ready: 10 * ms},                  // worker A, 0–10ms
		{arrive: 0, objects: 30, ready: 30 * ms},                  // worker B, 0–30ms
		{arrive: 1 * ms, objects: 5, ready: 14 * ms, waiting: 1},  // waits for A: 10–15ms
		{arrive: 2 * ms, objects: 5, ready: 18 * ms, waiting: 2},  // A again: 15–20ms
		{arrive: 3 * ms, full: true, waiting: 2},                  // two waiting: no room
		{arrive: 10 * ms, objects: 1, ready: 11 * ms, waiting: 2}, // the first started at 10ms: room; 20–21ms
		{arrive: 15 * ms, objects: 1, ready: 7 * ms, waiting: 2},  // and the second at 15ms; 21–22ms
		{arrive: 15 * ms, full: true, waiting: 2},
		{arrive: 22 * ms, objects: 1, ready: 1 * ms},               // every request started; A idle: 22–23ms
		{arrive: 100 * ms, objects: 0, ready: 0},                   // an idle server: no wait, no time
		{arrive: 100 * ms, objects: 50, ready: 50 * ms},            // B, free since 30ms: 100–150ms
		{arrive: 100 * ms, objects: 50, ready: 50 * ms},            // A, whose empty job ended at 100ms
		{arrive: 100 * ms, objects: 1, ready: 51 * ms, waiting: 1}, // 150–151ms
	} {
		if admitted := q.admit(at(c.arrive)); admitted == c.full {
			t.Fatalf("arrival %d at %v: admitted %v, want %v", i, c.arrive, admitted, !c.full)
		}
		if !c.full {
			if ready := q.serve(at(c.arrive), c.objects, 0); ready != c.ready {
				t.Fatalf("arrival %d at %v: ready after %v, want %v", i, c.arrive, ready, c.ready)
			}
		}
		if n := q.queue.Waiting(at(c.arrive)); n != c.waiting {
			t.Fatalf("arrival %d: %d waiting, want %d", i, n, c.waiting)
		}
	}
	var st ServerStats
	q.copyStats(&st)
	// Waits: 9, 13, 10, 6, 50 (ms); the rest none.
	if st.Served != 11 || st.Overflowed != 2 || st.QueueDelay != 88*ms || st.MaxQueueDelay != 50*ms {
		t.Fatalf("stats %+v", st)
	}

	// A reset frees every worker and empties the queue, and keeps the counts.
	q.reset()
	if !q.admit(at(100*ms)) || q.serve(at(100*ms), 1, 0) != ms || q.queue.Waiting(at(100*ms)) != 0 {
		t.Error("after reset the server is not idle")
	}
	q.copyStats(&st)
	if st.Served != 12 || st.Overflowed != 2 || st.MaxQueueDelay != 50*ms {
		t.Errorf("stats after reset %+v", st)
	}
}

// TestServiceQueueUnbounded: with no QueueLimit nothing overflows, and the
// service time counts the answer's size (Service.Time).
func TestServiceQueueUnbounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newServiceQueue(simnet.Service{Workers: 1, BytesPerSecond: 1000})
	for i := range 1000 {
		if !q.admit(t0) {
			t.Fatal("an unbounded queue overflowed")
		}
		if ready := q.serve(t0, 0, 500); ready != time.Duration(i+1)*500*ms {
			t.Fatalf("request %d ready after %v", i, ready)
		}
	}
	if n := q.queue.Waiting(t0); n != 999 {
		t.Errorf("%d waiting", n)
	}
	if newServiceQueue(simnet.Service{}) != nil {
		t.Error("the zero Service has a queue")
	}
}

package simnet

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestQueueOrder pushes events with many equal times in random order and
// expects them back by time, then by the order they were pushed.
func TestQueueOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	base := time.Unix(0, 0)
	var q eventQueue
	for seq := uint64(1); seq <= 500; seq++ {
		q.push(event{at: base.Add(time.Duration(r.IntN(10))), seq: seq})
	}
	if q.len() != 500 {
		t.Fatalf("len %d", q.len())
	}
	if _, ok := q.popDue(base.Add(-1)); ok {
		t.Fatal("popped an event before its time")
	}
	var last event
	for i := range 500 {
		e, ok := q.popDue(base.Add(time.Hour))
		if !ok {
			t.Fatalf("queue ran dry after %d", i)
		}
		if i > 0 && (e.at.Before(last.at) || (e.at.Equal(last.at) && e.seq < last.seq)) {
			t.Fatalf("(%v, %d) came after (%v, %d)", e.at.Sub(base), e.seq, last.at.Sub(base), last.seq)
		}
		last = e
	}
	if _, ok := q.popDue(base.Add(time.Hour)); ok || q.len() != 0 {
		t.Fatal("queue not empty")
	}
}

// TestQueuePopDueStopsAtNow takes only the events due.
func TestQueuePopDueStopsAtNow(t *testing.T) {
	base := time.Unix(0, 0)
	var q eventQueue
	for i, d := range []time.Duration{30, 10, 20, 10} {
		q.push(event{at: base.Add(d), seq: uint64(i + 1)})
	}
	var got []uint64
	for {
		e, ok := q.popDue(base.Add(20))
		if !ok {
			break
		}
		got = append(got, e.seq)
	}
	if len(got) != 3 || got[0] != 2 || got[1] != 4 || got[2] != 3 {
		t.Fatalf("popped %v, want [2 4 3]", got)
	}
	if !q.peek().Equal(base.Add(30)) {
		t.Fatalf("left %v", q.peek())
	}
}

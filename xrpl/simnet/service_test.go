package simnet

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestServiceValidate(t *testing.T) {
	good := []Service{
		{},
		{Workers: 1},
		{Workers: MaxWorkers, PerRequest: ms, PerObject: ms, BytesPerSecond: 1, QueueLimit: 1, Overflow: OverflowReject},
	}
	for i, s := range good {
		if err := (Profile{Service: s}).Validate(); err != nil {
			t.Errorf("good service %d: %v", i, err)
		}
	}
	bad := map[string]Service{
		"negative workers":    {Workers: -1},
		"too many workers":    {Workers: MaxWorkers + 1},
		"negative per req":    {Workers: 1, PerRequest: -1},
		"negative per object": {Workers: 1, PerObject: -1},
		"negative bytes/s":    {Workers: 1, BytesPerSecond: -1},
		"negative queue":      {Workers: 1, QueueLimit: -1},
		"unknown overflow":    {Workers: 1, Overflow: 2},
		"time, no workers":    {PerRequest: ms},
		"queue, no workers":   {QueueLimit: 3},
		"reject, no workers":  {Overflow: OverflowReject},
	}
	for name, s := range bad {
		if err := (Profile{Service: s}).Validate(); !errors.Is(err, ErrBadProfile) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestOverflowString(t *testing.T) {
	for o, want := range map[Overflow]string{OverflowDrop: "drop", OverflowReject: "reject", 5: "Overflow(5)"} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q", o, got)
		}
	}
}

func TestServiceTime(t *testing.T) {
	for _, c := range []struct {
		name          string
		s             Service
		objects, size int
		want          time.Duration
	}{
		{"unlimited", Service{}, 5, 1000, 0},
		{"nothing", Service{Workers: 1}, 5, 1000, 0},
		{"per request", Service{Workers: 1, PerRequest: 3 * ms}, 5, 1000, 3 * ms},
		{"per object", Service{Workers: 1, PerObject: 2 * ms}, 5, 1000, 10 * ms},
		{"per byte", Service{Workers: 1, BytesPerSecond: 1000}, 5, 1500, 1500 * ms},
		{"per byte rounds up", Service{Workers: 1, BytesPerSecond: 3}, 0, 1, 333333334},
		{"all three", Service{Workers: 1, PerRequest: ms, PerObject: ms, BytesPerSecond: 1 << 20}, 4, 1 << 19, 505 * ms},
		{"huge per object caps", Service{Workers: 1, PerObject: time.Hour}, 2, 0, MaxLatency},
		{"objects overflow caps", Service{Workers: 1, PerObject: 1}, math.MaxInt, 0, MaxLatency},
		{"huge per request caps", Service{Workers: 1, PerRequest: math.MaxInt64, PerObject: math.MaxInt64}, 1, 0, MaxLatency},
	} {
		if got := c.s.Time(c.objects, c.size); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestServiceQueue drives the queue arithmetic with exact times: two
// workers, at most two waiting.
func TestServiceQueue(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	q := NewServiceQueue(2, 2)
	for i, c := range []struct {
		arrive, need      time.Duration
		full              bool
		start, end        time.Duration
		waitingAfterServe int
	}{
		{arrive: 0, need: 10 * ms, start: 0, end: 10 * ms},                                      // worker A
		{arrive: 0, need: 30 * ms, start: 0, end: 30 * ms},                                      // worker B
		{arrive: 1 * ms, need: 5 * ms, start: 10 * ms, end: 15 * ms, waitingAfterServe: 1},      // waits for A
		{arrive: 2 * ms, need: 5 * ms, start: 15 * ms, end: 20 * ms, waitingAfterServe: 2},      // A again
		{arrive: 3 * ms, full: true, waitingAfterServe: 2},                                      // two waiting: full
		{arrive: 10 * ms, need: 1 * ms, start: 20 * ms, end: 21 * ms, waitingAfterServe: 2},     // the first started at 10ms: room
		{arrive: 15 * ms, need: 1 * ms, start: 21 * ms, end: 22 * ms, waitingAfterServe: 2},     // and the second at 15ms
		{arrive: 15 * ms, full: true, waitingAfterServe: 2},                                     //
		{arrive: 22 * ms, need: 1 * ms, start: 22 * ms, end: 23 * ms, waitingAfterServe: 0},     // everything started; A idle
		{arrive: 100 * ms, need: 0, start: 100 * ms, end: 100 * ms, waitingAfterServe: 0},       // idle peer: no wait
		{arrive: 100 * ms, need: 50 * ms, start: 100 * ms, end: 150 * ms, waitingAfterServe: 0}, // B was free since 30ms
		{arrive: 100 * ms, need: 50 * ms, start: 100 * ms, end: 150 * ms, waitingAfterServe: 0}, // A's zero-length job ended at 100ms
		{arrive: 100 * ms, need: 1 * ms, start: 150 * ms, end: 151 * ms, waitingAfterServe: 1},
	} {
		if full := q.Full(at(c.arrive)); full != c.full {
			t.Fatalf("arrival %d at %v: full %v, want %v", i, c.arrive, full, c.full)
		}
		if !c.full {
			start, end := q.Serve(at(c.arrive), c.need)
			if !start.Equal(at(c.start)) || !end.Equal(at(c.end)) {
				t.Fatalf("arrival %d at %v: served %v to %v, want %v to %v", i, c.arrive, start.Sub(t0), end.Sub(t0), c.start, c.end)
			}
		}
		if n := q.Waiting(at(c.arrive)); n != c.waitingAfterServe {
			t.Fatalf("arrival %d: %d waiting, want %d", i, n, c.waitingAfterServe)
		}
	}
	q.Reset()
	if start, _ := q.Serve(at(100*ms), ms); !start.Equal(at(100*ms)) || q.Waiting(at(100*ms)) != 0 {
		t.Errorf("after reset: start %v", start.Sub(t0))
	}
	// An unbounded queue is never full.
	u := NewServiceQueue(1, 0)
	for range 1000 {
		if u.Full(t0) {
			t.Fatal("unbounded queue full")
		}
		u.Serve(t0, time.Second)
	}
	if n := u.Waiting(t0); n != 999 {
		t.Errorf("%d waiting", n)
	}
}

package overlay

import (
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// TestVirtualClockOrder: entries run in (time, order armed) order, equal
// times in the order they were armed; a stopped timer never runs; next
// stops at the limit and leaves what lies beyond it; time jumps to each
// entry's instant.
func TestVirtualClockOrder(t *testing.T) {
	c := newVirtualClock()
	var ran []string
	var at []time.Duration
	mark := func(name string) func() {
		return func() { ran = append(ran, name); at = append(at, c.Now().Sub(epoch)) }
	}
	c.at(20*time.Millisecond, mark("b1"))
	c.AfterFunc(10*time.Millisecond, mark("a"))
	c.at(20*time.Millisecond, mark("b2"))
	stopped := c.AfterFunc(15*time.Millisecond, mark("stopped"))
	c.AfterFunc(20*time.Millisecond, mark("b3"))
	c.at(time.Second, mark("late"))
	if !stopped.Stop() {
		t.Fatal("Stop of an armed timer reports it was not armed")
	}
	for {
		fn, ok := c.next(epoch.Add(500 * time.Millisecond))
		if !ok {
			break
		}
		fn()
	}
	if want := []string{"a", "b1", "b2", "b3"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if want := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}; !slices.Equal(at, want) {
		t.Errorf("ran at %v, want %v", at, want)
	}
	if c.pending() != 1 {
		t.Errorf("%d entries left, want the one past the limit", c.pending())
	}
	// An entry armed from inside a run counts from the time then.
	fn, _ := c.next(epoch.Add(time.Hour))
	fn()
	c.AfterFunc(0, mark("now"))
	c.AfterFunc(-time.Second, mark("negative"))
	for fn, ok := c.next(epoch.Add(time.Hour)); ok; fn, ok = c.next(epoch.Add(time.Hour)) {
		fn()
	}
	if want := []string{"a", "b1", "b2", "b3", "late", "now", "negative"}; !slices.Equal(ran, want) {
		t.Errorf("ran %v, want %v", ran, want)
	}
	if got := at[len(at)-1]; got != time.Second {
		t.Errorf("a negative delay ran at %v, want now (1s)", got)
	}
}

// TestNodeClockSignalsWatching: a node's clock tells when its fetch asks for
// a ticker, and that ticker never ticks.
func TestNodeClockSignalsWatching(t *testing.T) {
	c := newNodeClock(newVirtualClock(), false)
	select {
	case <-c.watching:
		t.Fatal("watching before any Ticker")
	default:
	}
	tick := c.Ticker(time.Millisecond)
	defer tick.Stop()
	c.Ticker(time.Millisecond).Stop() // a second one is fine
	select {
	case <-c.watching:
	default:
		t.Fatal("not watching after Ticker")
	}
	c.at(time.Hour, func() {})
	for fn, ok := c.next(epoch.Add(2 * time.Hour)); ok; fn, ok = c.next(epoch.Add(2 * time.Hour)) {
		fn()
	}
	select {
	case <-tick.C:
		t.Error("the ticker ticked")
	default:
	}
}

// TestResettableTimersArePolled: a scheduler's clock finds its timer
// re-armed with Reset within PollEvery, runs it, and forgets it once its
// node retires; a timer on a clock whose timers are never Reset fires once,
// exactly.
func TestResettableTimersArePolled(t *testing.T) {
	vc := newVirtualClock()
	sched := newNodeClock(vc, true)
	other := newNodeClock(vc, false)
	var schedAt, otherAt []time.Duration
	var timer *clock.Timer
	timer = sched.AfterFunc(10*time.Millisecond, func() {
		schedAt = append(schedAt, vc.Now().Sub(epoch))
		if len(schedAt) < 3 {
			timer.Reset(5*time.Millisecond + 300*time.Microsecond)
		}
	})
	var once *clock.Timer
	once = other.AfterFunc(7*time.Millisecond, func() {
		otherAt = append(otherAt, vc.Now().Sub(epoch))
		once.Reset(time.Millisecond) // unseen: never runs again
	})
	run := func(until time.Duration) {
		for fn, ok := vc.next(epoch.Add(until)); ok; fn, ok = vc.next(epoch.Add(until)) {
			fn()
		}
	}
	run(100 * time.Millisecond)
	if len(otherAt) != 1 || otherAt[0] != 7*time.Millisecond {
		t.Errorf("the other timer ran at %v, want once at 7ms", otherAt)
	}
	// Polls run every PollEvery from the first AfterFunc, at 1ms, 2ms, ...;
	// a poll runs an armed timer whether it is due or not (the scheduler
	// only re-arms then), so the first poll runs it at 1ms, before its
	// time; it re-arms at 1ms+5.3ms, found by the poll at 2ms, and so on.
	if len(schedAt) != 3 {
		t.Fatalf("the scheduler's timer ran at %v, want three times", schedAt)
	}
	for i, at := range schedAt {
		if at != time.Duration(i+1)*PollEvery {
			t.Errorf("run %d at %v, want %v (each poll finds it armed)", i, at, time.Duration(i+1)*PollEvery)
		}
	}
	vc.retire(sched)
	timer.Reset(time.Millisecond)
	run(200 * time.Millisecond)
	if len(schedAt) != 3 {
		t.Errorf("a retired node's timer ran again: %v", schedAt)
	}
	if vc.pending() != 0 {
		t.Errorf("%d entries left: polling goes on with nothing to poll", vc.pending())
	}
}

package overlay

import (
	"slices"
	"testing"
	"time"
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
	c := newNodeClock(newVirtualClock())
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

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
	c := newNodeClock(newVirtualClock(), nil)
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

// wakingOwner stands in for a scheduler on a waking clock: one timer,
// re-armed by Reset (which the clock does not see), due when due says.
type wakingOwner struct {
	clock *nodeClock
	timer *clock.Timer
	due   time.Time
	armed bool
	ran   []time.Duration
	again []time.Duration // the waits it re-arms for when its timer runs, in turn
}

func (o *wakingOwner) nextWake() (time.Time, bool) { return o.due, o.armed }

// arm reads the clock, as the scheduler does, and arms the timer d from now.
func (o *wakingOwner) arm(d time.Duration) {
	o.due, o.armed = o.clock.Now().Add(d), true
	if o.timer == nil {
		o.timer = o.clock.AfterFunc(d, o.onTimer)
	} else {
		o.timer.Reset(d)
	}
}

func (o *wakingOwner) onTimer() {
	now := o.clock.Now()
	o.ran = append(o.ran, now.Sub(epoch))
	o.armed = false
	if len(o.again) > 0 {
		o.arm(o.again[0])
		o.again = o.again[1:]
	}
}

// TestWakingClockRunsTheTimerWhenDue: a waking clock runs its owner's timer
// function exactly when its NextWake says, after each arming, earlier
// re-arming or re-arming from the function itself; never when it has been
// disarmed or moved, nor once its node retires. A timer on a plain clock,
// whose Reset is unseen, fires once, exactly.
func TestWakingClockRunsTheTimerWhenDue(t *testing.T) {
	vc := newVirtualClock()
	owner := &wakingOwner{clock: newNodeClock(vc, nil), again: []time.Duration{3 * time.Millisecond}}
	owner.clock.wakeBy(owner.nextWake)
	other := newNodeClock(vc, nil)
	var otherAt []time.Duration
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
	var due []time.Duration
	vc.woke = func(n *nodeClock) {
		if n != owner.clock {
			t.Errorf("woke %p, want the owner's clock", n)
		}
		if !owner.armed || owner.due.After(vc.Now()) {
			t.Errorf("the timer ran at %v, due at %v (armed %v)", vc.Now().Sub(epoch), owner.due.Sub(epoch), owner.armed)
		}
		due = append(due, owner.due.Sub(epoch))
	}

	owner.arm(10 * time.Millisecond)
	// At 2ms an event moves the timer earlier, to 6ms; at 4ms another
	// re-arms it later, which a scheduler never does while armed, but
	// the clock follows NextWake whatever it says.
	vc.at(2*time.Millisecond, func() { owner.arm(4 * time.Millisecond) })
	run(5 * time.Millisecond)
	if len(owner.ran) != 0 {
		t.Fatalf("ran at %v before it was due", owner.ran)
	}
	run(100 * time.Millisecond)
	// Due at 6ms: it runs then (not at 10ms) and re-arms for 9ms.
	if want := []time.Duration{6 * time.Millisecond, 9 * time.Millisecond}; !slices.Equal(owner.ran, want) {
		t.Errorf("the owner's timer ran at %v, want %v", owner.ran, want)
	}
	if !slices.Equal(due, owner.ran) {
		t.Errorf("due at %v when it ran at %v", due, owner.ran)
	}
	if len(otherAt) != 1 || otherAt[0] != 7*time.Millisecond {
		t.Errorf("the plain timer ran at %v, want once at 7ms", otherAt)
	}

	// Armed, then disarmed (as Stop does, without reading the clock) and
	// read again: nothing runs.
	owner.arm(time.Millisecond)
	owner.armed = false
	owner.clock.Now()
	run(200 * time.Millisecond)
	// Armed, at 109ms, for a time already past: it runs at once.
	if now := vc.Now().Sub(epoch); now != 9*time.Millisecond {
		t.Fatalf("the time moved to %v with nothing to run", now)
	}
	vc.at(100*time.Millisecond, func() { owner.due, owner.armed = owner.clock.Now().Add(-time.Second), true })
	run(300 * time.Millisecond)
	if want := []time.Duration{6 * time.Millisecond, 9 * time.Millisecond, 109 * time.Millisecond}; !slices.Equal(owner.ran, want) {
		t.Errorf("the owner's timer ran at %v, want %v", owner.ran, want)
	}

	owner.arm(time.Millisecond)
	vc.retire(owner.clock)
	owner.arm(time.Millisecond)
	run(400 * time.Millisecond)
	if len(owner.ran) != 3 {
		t.Errorf("a retired node's timer ran again: %v", owner.ran)
	}
	if vc.pending() != 0 {
		t.Errorf("%d entries left", vc.pending())
	}
}

// TestWakingClockRefusesASecondTimer: a waking clock runs one timer; a
// second AfterFunc would go unseen, so it panics.
func TestWakingClockRefusesASecondTimer(t *testing.T) {
	c := newNodeClock(newVirtualClock(), func() (time.Time, bool) { return time.Time{}, false })
	c.AfterFunc(time.Second, func() {})
	defer func() {
		if recover() == nil {
			t.Error("a second AfterFunc did not panic")
		}
	}()
	c.AfterFunc(time.Second, func() {})
}

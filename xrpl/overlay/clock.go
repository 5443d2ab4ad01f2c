package overlay

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// virtualClock is the simulation's time: a clock.Clock that moves only when
// the driver takes the next due timer (next), and then jumps straight to it.
// Every timer and every network event sits in one queue ordered by (time,
// order armed), so equal times fire in a fixed order and a seed replays.
// Timer functions run on the driver's goroutine, one at a time: nothing runs
// in the background, which is what makes thousands of schedulers in one
// process deterministic.
//
// The clock package's Timer is a concrete type whose Stop and Reset this
// clock cannot intercept, so each AfterFunc timer is backed by a private
// clock.Mock that is never advanced: Stop on it records the stop, and the
// driver asks it (by stopping it once more) before running the function. A
// Reset is seen only as the timer being armed, never for when. So the
// timers of a node whose clock says they may be Reset (a scheduler's: it
// arms one timer and re-arms it with Reset) are also polled every
// PollEvery, and their function runs whenever the poll finds them armed.
// That suits the scheduler, whose timer function, run before anything is
// due, only re-arms (the benchmarks' stepped clock relies on the same); its
// deadlines then fire at most PollEvery late. A scheduler therefore gets a
// clock of its own; other timers (the fetch's, the peer set's, which are
// never Reset and must not run early) fire exactly once, at their time.
//
// Only Now, Since, Until, AfterFunc and Ticker are supported; the others
// panic. Tickers never tick: fetch uses its ticker for Progress and the
// stall check only, and the simulation ends a fetch that cannot finish by
// its own time limit instead.
//
// It is safe for concurrent use, though the driver hands control to one
// goroutine at a time.
type virtualClock struct {
	mu sync.Mutex
	// The following fields are guarded by mu.
	now    time.Time
	seq    uint64
	queue  timerQueue
	polled []polledTimer // timers that may be Reset, in the order armed
	poll   bool          // a poll is queued
	armed  []func()      // pollTimers' scratch, reused: it never runs twice at once
}

// PollEvery is how often the virtual clock looks for armed timers that may
// have been Reset (see virtualClock): the most a scheduler's deadline fires
// late in the simulation.
const PollEvery = time.Millisecond

// polledTimer is a timer that may be Reset.
type polledTimer struct {
	handle *clock.Timer
	fn     func()
	owner  *nodeClock // nil for a timer of no node
}

// epoch is where every simulation's time starts.
var epoch = time.Unix(0, 0)

func newVirtualClock() *virtualClock { return &virtualClock{now: epoch} }

// timerEntry is one armed timer or network event.
type timerEntry struct {
	at  time.Time
	seq uint64
	fn  func()
	// handle, if set, is the stoppable timer AfterFunc returned; an event
	// the network queued has none.
	handle *clock.Timer
}

// timerQueue is a min-heap of timerEntry ordered by (at, seq).
type timerQueue []timerEntry

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *timerQueue) Push(x any)   { *q = append(*q, x.(timerEntry)) }
func (q *timerQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = timerEntry{}
	*q = old[:len(old)-1]
	return e
}

// at queues fn to run d from now (d < 0 counts as 0).
func (c *virtualClock) at(d time.Duration, fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushLocked(timerEntry{fn: fn}, d)
}

// pushLocked queues e to run d from now. The caller holds c.mu.
func (c *virtualClock) pushLocked(e timerEntry, d time.Duration) {
	c.seq++
	e.at, e.seq = c.now.Add(max(d, 0)), c.seq
	heap.Push(&c.queue, e)
}

// next takes the earliest entry due no later than limit whose timer has not
// been stopped, moves the time to it and returns its function; false if
// there is none. The caller runs the function.
func (c *virtualClock) next(limit time.Time) (func(), bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) > 0 && !c.queue[0].at.After(limit) {
		e := heap.Pop(&c.queue).(timerEntry)
		if e.handle != nil && !e.handle.Stop() {
			continue // stopped by its owner
		}
		c.now = e.at
		return e.fn, true
	}
	return nil, false
}

// pollTimers runs, in the order they were made, the functions of the
// polled timers that are armed, and queues the next poll while there are
// any. Finding one armed disarms it: its function re-arms it if it must.
// Timers of retired nodes are forgotten.
func (c *virtualClock) pollTimers() {
	c.mu.Lock()
	armed := c.armed[:0]
	var due []polledTimer
	keep := c.polled[:0]
	for _, p := range c.polled {
		if p.owner != nil && p.owner.retired {
			continue
		}
		keep = append(keep, p)
		if p.handle.Stop() {
			armed = append(armed, p.fn)
			due = append(due, p)
		}
	}
	clear(c.polled[len(keep):])
	c.polled = keep
	if c.poll = len(c.polled) > 0; c.poll {
		c.pushLocked(timerEntry{fn: c.pollTimers}, PollEvery)
	}
	now := c.now
	c.mu.Unlock()
	for i, fn := range armed {
		if w := due[i].owner; w != nil && w.wake != nil {
			if at, ok := w.wake(); ok && at.After(now) {
				due[i].handle.Reset(0)
				continue
			}
		}
		fn()
	}
	clear(armed) // let the functions go
	c.mu.Lock()
	c.armed = armed[:0]
	c.mu.Unlock()
}

// retire forgets the timers of n's clock: its node no longer runs a fetch.
func (c *virtualClock) retire(n *nodeClock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.retired = true
}

// pending reports how many entries are queued, stopped timers included.
func (c *virtualClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

func (c *virtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *virtualClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *virtualClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// AfterFunc runs f on the driver's goroutine d from now, unless the
// returned timer is stopped first. The timer must not be Reset.
func (c *virtualClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.afterFunc(d, f, nil)
}

func (c *virtualClock) afterFunc(d time.Duration, f func(), owner *nodeClock) *clock.Timer {
	handle := clock.NewMock().AfterFunc(d, func() {})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushLocked(timerEntry{fn: f, handle: handle}, d)
	if owner != nil && owner.resettable {
		c.polled = append(c.polled, polledTimer{handle: handle, fn: f, owner: owner})
		if !c.poll {
			c.poll = true
			c.pushLocked(timerEntry{fn: c.pollTimers}, PollEvery)
		}
	}
	return handle
}

// Ticker returns a ticker that never ticks (see virtualClock).
func (c *virtualClock) Ticker(d time.Duration) *clock.Ticker { return clock.NewMock().Ticker(d) }

func (c *virtualClock) After(time.Duration) <-chan time.Time { panic(unsupported("After")) }
func (c *virtualClock) Sleep(time.Duration)                  { panic(unsupported("Sleep")) }
func (c *virtualClock) Tick(time.Duration) <-chan time.Time  { panic(unsupported("Tick")) }
func (c *virtualClock) Timer(time.Duration) *clock.Timer     { panic(unsupported("Timer")) }
func (c *virtualClock) WithDeadline(context.Context, time.Time) (context.Context, context.CancelFunc) {
	panic(unsupported("WithDeadline"))
}
func (c *virtualClock) WithTimeout(context.Context, time.Duration) (context.Context, context.CancelFunc) {
	panic(unsupported("WithTimeout"))
}

func unsupported(method string) string {
	return "overlay: the virtual clock has no " + method + ": its timers run only as AfterFunc, on the driver's goroutine"
}

// nodeClock is one fetching node's view of the clock. Its Ticker tells the
// driver that the node's fetch has sent its first requests and now only
// waits: the fetch asks for its ticker just then.
type nodeClock struct {
	*virtualClock
	// resettable says the node's timers may be Reset, and must be polled
	// (see virtualClock): set for a scheduler's clock.
	resettable bool
	wake       func() (time.Time, bool)
	once       sync.Once
	watching   chan struct{} // closed by the first Ticker
	retired    bool          // guarded by virtualClock.mu; see retire
}

// AfterFunc is virtualClock's, its timer the node's (see retire).
func (c *nodeClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	return c.virtualClock.afterFunc(d, f, c)
}

func newNodeClock(c *virtualClock, resettable bool) *nodeClock {
	return &nodeClock{virtualClock: c, resettable: resettable, watching: make(chan struct{})}
}

func (c *nodeClock) Ticker(d time.Duration) *clock.Ticker {
	c.once.Do(func() { close(c.watching) })
	return c.virtualClock.Ticker(d)
}

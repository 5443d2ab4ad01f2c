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
// The clock package's Timer is a concrete type whose Stop this clock cannot
// intercept, so each AfterFunc timer is backed by a private clock.Mock that
// is never advanced: Stop on it records the stop, and the driver asks it
// (by stopping it once more) before running the function. A Reset would go
// unseen, so the schedulers here must re-arm with a fresh AfterFunc, as
// package scheduler does.
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
	now   time.Time
	seq   uint64
	queue timerQueue
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
	c.pushLocked(d, fn, nil)
}

func (c *virtualClock) pushLocked(d time.Duration, fn func(), handle *clock.Timer) {
	c.seq++
	heap.Push(&c.queue, timerEntry{at: c.now.Add(max(d, 0)), seq: c.seq, fn: fn, handle: handle})
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
	handle := clock.NewMock().AfterFunc(d, func() {})
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushLocked(d, f, handle)
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
	once     sync.Once
	watching chan struct{} // closed by the first Ticker
}

func newNodeClock(c *virtualClock) *nodeClock {
	return &nodeClock{virtualClock: c, watching: make(chan struct{})}
}

func (c *nodeClock) Ticker(d time.Duration) *clock.Ticker {
	c.once.Do(func() { close(c.watching) })
	return c.virtualClock.Ticker(d)
}

package overlay

import (
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
// driver asks it (by stopping it once more) before running the function.
// A Reset is not seen at all. A scheduler arms one timer and re-arms it
// with Reset, so its clock (a nodeClock that wakes by the scheduler's
// NextWake) does not go by the timer: every read of that clock marks the
// node's wake as stale, since the scheduler re-arms only in a call that
// has just read its clock, and before it takes the next entry the driver
// asks each stale node's scheduler when its timer is due and queues the
// timer's function for exactly then, superseding what it queued before.
// So a scheduler's timer function runs only when it is due, and at its
// time, as on a real clock. Other timers (the fetch's, the peer set's,
// which are never Reset) fire once, at their time.
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
	stale []*nodeClock // waking clocks read since their wake was last queued, in the order read
	spare []*nodeClock // syncWakes' scratch, reused: the driver alone calls it
	// The tests' checks, called without mu when set: woke with each waking
	// clock whose timer function next is about to hand the driver (it
	// runs only when due), synced after syncWakes (every armed timer has
	// its wake queued).
	woke   func(*nodeClock)
	synced func()
}

// epoch is where every simulation's time starts.
var epoch = time.Unix(0, 0)

func newVirtualClock() *virtualClock { return &virtualClock{now: epoch} }

// timerEntry is one armed timer or network event.
type timerEntry struct {
	at  time.Duration // since epoch
	seq uint64
	fn  func()
	// handle, if set, is the stoppable timer AfterFunc returned; an event
	// the network queued has none.
	handle *clock.Timer
	// waker, if set, is the waking clock whose timer function this entry
	// runs (fn is nil: the function is waker's), valid while waker.gen is
	// still gen.
	waker *nodeClock
	gen   uint64
}

// timerQueue is a min-heap of timerEntry ordered by (at, seq). It is typed,
// not a container/heap, whose Push and Pop box every entry in an interface:
// two allocations for each of the millions of events of a large overlay.
type timerQueue []timerEntry

func (q timerQueue) less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}

func (q *timerQueue) push(e timerEntry) {
	h := append(*q, e)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	*q = h
}

// pop removes and returns the first entry; the queue must not be empty.
func (q *timerQueue) pop() timerEntry {
	h := *q
	e := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = timerEntry{} // let its function go
	h = h[:n]
	for i := 0; ; {
		first := 2*i + 1
		if first >= n {
			break
		}
		if second := first + 1; second < n && h.less(second, first) {
			first = second
		}
		if !h.less(first, i) {
			break
		}
		h[i], h[first] = h[first], h[i]
		i = first
	}
	*q = h
	return e
}

// at queues fn to run d from now (d < 0 counts as 0).
func (c *virtualClock) at(d time.Duration, fn func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pushLocked(timerEntry{fn: fn}, c.now.Add(max(d, 0)))
}

// pushLocked queues e to run at at. The caller holds c.mu.
func (c *virtualClock) pushLocked(e timerEntry, at time.Time) {
	c.seq++
	e.at, e.seq = at.Sub(epoch), c.seq
	c.queue.push(e)
}

// next takes the earliest entry due no later than limit whose timer has not
// been stopped or superseded, moves the time to it and returns its
// function; false if there is none. The caller runs the function. It first
// queues the wakes of the clocks read since the last call (syncWakes).
func (c *virtualClock) next(limit time.Time) (func(), bool) {
	c.syncWakes()
	c.mu.Lock()
	fn, waker, ok := c.popLocked(limit)
	woke := c.woke
	c.mu.Unlock()
	if waker != nil && woke != nil {
		woke(waker)
	}
	return fn, ok
}

// popLocked is next's work under c.mu; waker is the waking clock whose
// timer function fn is, if it is one.
func (c *virtualClock) popLocked(limit time.Time) (fn func(), waker *nodeClock, ok bool) {
	for len(c.queue) > 0 && c.queue[0].at <= limit.Sub(epoch) {
		e := c.queue.pop()
		switch {
		case e.waker != nil:
			if e.gen != e.waker.gen {
				continue // superseded, or its node retired
			}
			e.waker.queued = false
			e.fn, waker = e.waker.timerFn, e.waker
		case e.handle != nil && !e.handle.Stop():
			continue // stopped by its owner
		}
		c.now = epoch.Add(e.at)
		return e.fn, waker, true
	}
	return nil, nil, false
}

// syncWakes asks each stale waking clock's owner when its timer is next
// due, and queues its timer function for then (or now, if that has
// passed), superseding the entry queued before, unless one is queued for
// that time already; a timer not armed has nothing queued. The owner is
// asked without c.mu: the scheduler reads this clock under its own lock.
func (c *virtualClock) syncWakes() {
	c.mu.Lock()
	stale := c.stale
	c.stale = c.spare[:0]
	for _, n := range stale {
		n.marked = false
	}
	c.mu.Unlock()
	for _, n := range stale {
		c.mu.Lock()
		wake := n.wake
		c.mu.Unlock()
		if wake == nil {
			continue // retired
		}
		at, armed := wake()
		c.mu.Lock()
		at = latest(at, c.now)
		switch {
		case n.retired:
		case !armed:
			n.gen++
			n.queued = false
		case !n.queued || !n.queuedAt.Equal(at):
			n.gen++
			n.queued, n.queuedAt = true, at
			c.pushLocked(timerEntry{waker: n, gen: n.gen}, at)
		}
		c.mu.Unlock()
	}
	clear(stale)
	c.mu.Lock()
	c.spare = stale[:0]
	synced := c.synced
	c.mu.Unlock()
	if synced != nil {
		synced()
	}
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// retire forgets n's timer: its node no longer runs a fetch, and its
// scheduler can go.
func (c *virtualClock) retire(n *nodeClock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.retired = true
	n.gen++
	n.queued = false
	n.timerFn, n.wake = nil, nil
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
	c.pushLocked(timerEntry{fn: f, handle: handle}, c.now.Add(max(d, 0)))
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
//
// A scheduler's nodeClock wakes by the scheduler's NextWake (see
// virtualClock): it holds the scheduler's one timer function, and every
// read of it marks its wake stale.
type nodeClock struct {
	*virtualClock
	once     sync.Once
	watching chan struct{} // closed by the first Ticker

	// The following fields are guarded by virtualClock.mu.
	wake     func() (time.Time, bool) // when the owner's timer is due; nil unless waking, or once retired
	timerFn  func()                   // the owner's timer function, once it has armed it
	marked   bool                     // on virtualClock.stale
	queued   bool                     // an entry of generation gen is queued, at queuedAt
	queuedAt time.Time
	gen      uint64
	retired  bool // see retire
}

// newNodeClock returns a view of c; wake, if not nil, makes it a waking
// clock.
func newNodeClock(c *virtualClock, wake func() (time.Time, bool)) *nodeClock {
	return &nodeClock{virtualClock: c, wake: wake, watching: make(chan struct{})}
}

// wakeBy makes n a waking clock that asks wake when its timer is due: its
// owner, made after its clock, arms it no sooner.
func (n *nodeClock) wakeBy(wake func() (time.Time, bool)) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.wake = wake
}

// readLocked marks a waking clock's wake stale: its owner read the time,
// and may be about to re-arm its timer. The caller holds mu.
func (n *nodeClock) readLocked() {
	if n.wake != nil && !n.marked {
		n.marked = true
		n.virtualClock.stale = append(n.virtualClock.stale, n)
	}
}

func (n *nodeClock) Now() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.readLocked()
	return n.now
}

func (n *nodeClock) Since(t time.Time) time.Duration { return n.Now().Sub(t) }
func (n *nodeClock) Until(t time.Time) time.Duration { return t.Sub(n.Now()) }

// AfterFunc is virtualClock's, except on a waking clock: there f is the
// owner's one timer function, run whenever its NextWake says it is due,
// and the timer returned is a stand-in whose Stop and Reset change nothing
// (its owner's NextWake says what they did).
func (n *nodeClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	n.mu.Lock()
	if n.wake == nil && !n.retired {
		n.mu.Unlock()
		return n.virtualClock.AfterFunc(d, f)
	}
	defer n.mu.Unlock()
	stand := clock.NewMock().AfterFunc(d, func() {})
	switch {
	case n.retired:
		// Its node's fetch has ended: the timer will never run.
	case n.timerFn != nil:
		panic("overlay: a scheduler's clock runs one timer, and this one has armed a second")
	default:
		n.timerFn = f
		n.readLocked()
	}
	return stand
}

func (n *nodeClock) Ticker(d time.Duration) *clock.Ticker {
	n.once.Do(func() { close(n.watching) })
	return n.virtualClock.Ticker(d)
}

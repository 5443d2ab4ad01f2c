package bench

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
)

// steppedClock is a clock.Clock whose time moves only when Add is called,
// and whose AfterFunc callbacks Add runs on the calling goroutine.
//
// The library's clock.Mock would do, but its Add sleeps a real millisecond
// per timer it fires and once more before returning, and runs each
// AfterFunc callback on a new goroutine. A benchmark of timeouts firing
// would then time mostly sleeping and goroutine hand-offs. Here Add calls
// every AfterFunc callback directly (the scheduler arms one), as if its
// timer had just fired; a firing with nothing due costs the scheduler a
// little and changes nothing.
//
// The timers handed out come from a clock.Mock that is never advanced, so
// Reset and Stop work on them and they never fire on their own.
type steppedClock struct {
	*clock.Mock // never advanced: it only supplies timers and unused methods

	elapsed atomic.Int64 // nanoseconds since the epoch, time.Unix(0, 0)

	mu        sync.Mutex
	callbacks []func() // guarded by mu
}

func newSteppedClock() *steppedClock { return &steppedClock{Mock: clock.NewMock()} }

func (c *steppedClock) Now() time.Time { return time.Unix(0, c.elapsed.Load()) }

func (c *steppedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *steppedClock) AfterFunc(d time.Duration, f func()) *clock.Timer {
	c.mu.Lock()
	c.callbacks = append(c.callbacks, f)
	c.mu.Unlock()
	return c.Mock.AfterFunc(d, func() {})
}

// Add moves time on by d and runs every AfterFunc callback.
func (c *steppedClock) Add(d time.Duration) {
	c.elapsed.Add(int64(d))
	c.mu.Lock()
	callbacks := c.callbacks
	c.mu.Unlock()
	for _, f := range callbacks {
		f()
	}
}

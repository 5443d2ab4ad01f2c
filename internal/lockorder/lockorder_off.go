//go:build !lockorder

package lockorder

import "sync"

// Enabled reports whether this is a checked build (build tag "lockorder").
// It is false here: Mutex is a plain sync.Mutex and nothing is checked.
const Enabled = false

// Mutex is a mutual exclusion lock with a name and a [Rank] that are only
// recorded in checked builds. Its zero value is an unlocked mutex, but Init
// must be called before first use so that checked builds can check it.
// A Mutex must not be copied after first use.
//
// In this unchecked build Mutex is exactly a sync.Mutex: it has the same size
// and its methods are inlinable forwards, so ranking locks costs nothing.
type Mutex struct {
	mu sync.Mutex
}

// Init records the lock's name and rank. It must be called once, before any
// other method. In this unchecked build it does nothing.
func (m *Mutex) Init(name string, rank Rank) {}

// Lock locks m, blocking until it is available. In this unchecked build it
// is exactly sync.Mutex.Lock: the rank order is not checked.
func (m *Mutex) Lock() { m.mu.Lock() }

// Unlock unlocks m. In this unchecked build it is exactly sync.Mutex.Unlock:
// it is a run-time error if m is not locked, but any goroutine may unlock it.
// Code that must also work in checked builds unlocks on the locking
// goroutine.
func (m *Mutex) Unlock() { m.mu.Unlock() }

// AssertHeld panics in checked builds unless the calling goroutine holds m.
// In this unchecked build it does nothing.
func (m *Mutex) AssertHeld() {}

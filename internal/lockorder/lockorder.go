// Package lockorder provides a mutex that carries a name and a rank, so that
// the order in which a goroutine acquires locks can be checked.
//
// The rule is: on any one goroutine, locks must be acquired in strictly
// increasing [Rank]. A goroutine holding a lock of rank r may only acquire
// locks of rank greater than r. That forbids both acquiring a lower-ranked (or
// equally ranked) lock after a higher one, and acquiring the same lock twice.
// If every goroutine follows the rule, no cycle of goroutines can wait on
// each other's locks, so the locks cannot deadlock among themselves.
// Unlocking may happen in any order.
//
// # Checked and unchecked builds
//
// The checks cost a goroutine-identity lookup and a global registry update on
// every Lock and Unlock, which is far too slow for production, so they exist
// only when the program is built with the build tag "lockorder" (CI runs the
// tests that way). [Enabled] reports which build this is.
//
// In an unchecked build (no tag) [Mutex] is exactly a [sync.Mutex]: same
// size, Init and AssertHeld do nothing, and Lock and Unlock are inlinable
// forwards to the sync.Mutex methods. Nothing is checked and nothing panics
// beyond what sync.Mutex itself does.
//
// In a checked build:
//
//   - Lock panics with an [*OrderError], before blocking, if the calling
//     goroutine already holds a lock whose rank is greater than or equal to
//     the rank of the lock being acquired. Acquiring a lock the goroutine
//     already holds is reported the same way (with Reentrant set) instead of
//     deadlocking.
//   - Unlock panics with a [*UsageError] if the calling goroutine does not
//     hold the lock, without unlocking it. Unlike a sync.Mutex, a Mutex must
//     therefore be unlocked by the goroutine that locked it.
//   - AssertHeld panics with a [*UsageError] unless the calling goroutine
//     holds the lock.
//   - Lock, Unlock and AssertHeld panic with a [*UsageError] if Init was not
//     called; Init panics with a [*UsageError] if it is called twice or with
//     an empty name.
//   - A Mutex counts the times it is locked, and its Acquisitions method
//     (which exists only in this build) returns the count, so that a test
//     can pin how many lock round trips a path takes.
//
// A panic from these checks leaves the checker's bookkeeping and the lock
// itself exactly as they were before the offending call, so a recovered
// panic does not corrupt later checks.
//
// Code that obeys these rules behaves identically in both builds: the checked
// build only turns latent locking bugs into panics, it does not change the
// locking semantics.
//
// # How goroutines are identified
//
// Go deliberately has no goroutine-local storage, so the checked build
// identifies the calling goroutine by parsing the "goroutine N [" header that
// [runtime.Stack] writes. That header is the long-standing format of every Go
// traceback but not a formal API, and producing it costs a full traceback of
// the calling goroutine (microseconds, growing with stack depth). Both are
// acceptable for a debug-only build and are why the checks are never compiled
// into normal builds.
package lockorder

import (
	"fmt"
	"sync"
)

// Rank orders locks. On any one goroutine, locks must be acquired in strictly
// increasing rank. Any int value is a valid rank; only the relative order of
// ranks matters. Leave gaps between ranks so new locks can be slotted in.
type Rank int

// Mutex is used through sync.Locker by callers such as sync.Cond.
var _ sync.Locker = (*Mutex)(nil)

// OrderError is the panic value of [Mutex.Lock] in a checked build when the
// acquisition would break the rank order. It is always used as a pointer.
//
// If Reentrant is true, the goroutine tried to acquire a lock it already
// holds; Held and HeldRank then describe that same lock. Otherwise Held is the
// highest-ranked lock the goroutine holds, whose rank is greater than or
// equal to AcquiringRank.
type OrderError struct {
	Acquiring     string // name of the lock being acquired
	AcquiringRank Rank   // rank of the lock being acquired
	Held          string // name of the held lock that forbids the acquisition
	HeldRank      Rank   // rank of that held lock
	Reentrant     bool   // the lock being acquired is the held lock itself
}

// Error describes the violation, naming both locks and their ranks, e.g.
//
//	lockorder: acquiring "offers" (rank 10) while holding "requests" (rank 20)
//	lockorder: acquiring "requests" (rank 20) twice on the same goroutine
func (e *OrderError) Error() string {
	if e.Reentrant {
		return fmt.Sprintf("lockorder: acquiring %q (rank %d) twice on the same goroutine",
			e.Acquiring, e.AcquiringRank)
	}
	return fmt.Sprintf("lockorder: acquiring %q (rank %d) while holding %q (rank %d)",
		e.Acquiring, e.AcquiringRank, e.Held, e.HeldRank)
}

// UsageError is the panic value, in a checked build, for misuse of a [Mutex]
// other than a rank-order violation: unlocking or asserting a lock the
// calling goroutine does not hold, using a Mutex before Init, or calling Init
// wrongly. It is always used as a pointer.
type UsageError struct {
	Op      string // the method that was misused: "Init", "Lock", "Unlock" or "AssertHeld"
	Name    string // the Mutex's name; empty if Init had not been called
	Rank    Rank   // the Mutex's rank; meaningless if Name is empty
	Problem string // what was wrong, e.g. "not held by the calling goroutine"
}

// Error describes the misuse, naming the lock if it has a name, e.g.
//
//	lockorder: Unlock of "offers" (rank 10): not held by the calling goroutine
//	lockorder: Lock of uninitialised Mutex: Init was not called
func (e *UsageError) Error() string {
	if e.Name == "" {
		return fmt.Sprintf("lockorder: %s of uninitialised Mutex: %s", e.Op, e.Problem)
	}
	return fmt.Sprintf("lockorder: %s of %q (rank %d): %s", e.Op, e.Name, e.Rank, e.Problem)
}

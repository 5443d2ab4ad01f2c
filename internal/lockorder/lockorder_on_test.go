//go:build lockorder

package lockorder

import (
	"slices"
	"testing"
	"time"
)

func TestEnabledInCheckedBuild(t *testing.T) {
	if !Enabled {
		t.Fatal("Enabled = false in a build with the lockorder tag")
	}
}

// mustPanic calls f, which must panic with a value of type E, and returns
// that value.
func mustPanic[E error](t *testing.T, f func()) E {
	t.Helper()
	v := recovered(f)
	if v == nil {
		t.Fatal("did not panic")
	}
	e, ok := v.(E)
	if !ok {
		t.Fatalf("panicked with %T %v, want %T", v, v, e)
	}
	return e
}

// recovered calls f and returns the value it panicked with, or nil.
func recovered(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// heldNames returns the names of the locks the registry says the calling
// goroutine holds, in acquisition order.
func heldNames() []string {
	gid := goid()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var names []string
	for _, m := range reg.held[gid] {
		names = append(names, m.name)
	}
	return names
}

// checkHeld fails the test unless the registry says the calling goroutine
// holds exactly the named locks, in this order.
func checkHeld(t *testing.T, want ...string) {
	t.Helper()
	if got := heldNames(); !slices.Equal(got, want) {
		t.Fatalf("registry says this goroutine holds %q, want %q", got, want)
	}
}

// checkRegistryEmpty fails the test unless no goroutine is recorded as
// holding a lock. Tests call it when all their goroutines have released
// everything, so it catches entries leaked by Unlock or by a panic.
func checkRegistryEmpty(t *testing.T) {
	t.Helper()
	reg.mu.Lock()
	n := len(reg.held)
	reg.mu.Unlock()
	if n != 0 {
		t.Fatalf("registry has entries for %d goroutines, want none", n)
	}
}

// checkUnlocked fails the test if m's underlying mutex is locked, which
// would mean a panicking Lock took it or a panicking Unlock released it.
func checkUnlocked(t *testing.T, m *Mutex) {
	t.Helper()
	if !m.mu.TryLock() {
		t.Fatalf("%q is locked, want unlocked", m.name)
	}
	m.mu.Unlock()
}

func checkLocked(t *testing.T, m *Mutex) {
	t.Helper()
	if m.mu.TryLock() {
		m.mu.Unlock()
		t.Fatalf("%q is unlocked, want locked", m.name)
	}
}

func TestRegistryTracksHeldLocks(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)
	callbacks := newMutex("callbacks", rankCallbacks)

	offers.Lock()
	requests.Lock()
	callbacks.Lock()
	checkHeld(t, "offers", "requests", "callbacks")

	// Releasing from the middle keeps the rest in order.
	requests.Unlock()
	checkHeld(t, "offers", "callbacks")
	offers.Unlock()
	checkHeld(t, "callbacks")
	callbacks.Unlock()
	checkHeld(t)
	checkRegistryEmpty(t)
}

func TestOutOfOrderPanics(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)

	requests.Lock()
	err := mustPanic[*OrderError](t, offers.Lock)
	want := OrderError{Acquiring: "offers", AcquiringRank: rankOffers, Held: "requests", HeldRank: rankRequests}
	if *err != want {
		t.Errorf("panic value = %+v, want %+v", *err, want)
	}
	const msg = `lockorder: acquiring "offers" (rank 10) while holding "requests" (rank 20)`
	if got := err.Error(); got != msg {
		t.Errorf("message = %q, want %q", got, msg)
	}
	checkUnlocked(t, offers)
	checkHeld(t, "requests")
	requests.Unlock()
	checkRegistryEmpty(t)
}

// TestOutOfOrderNamesHighestHeld checks that the reported held lock is the
// highest-ranked one, even when a lower-ranked held lock would also forbid
// the acquisition.
func TestOutOfOrderNamesHighestHeld(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)
	callbacks := newMutex("callbacks", rankCallbacks)

	offers.Lock()
	callbacks.Lock()
	err := mustPanic[*OrderError](t, requests.Lock)
	if err.Held != "callbacks" || err.HeldRank != rankCallbacks || err.Reentrant {
		t.Errorf("panic value = %+v, want held \"callbacks\" (rank %d), not reentrant", *err, rankCallbacks)
	}

	// Once callbacks is released only offers, which is lower, is held, so
	// the same acquisition is allowed.
	callbacks.Unlock()
	requests.Lock()
	checkHeld(t, "offers", "requests")
	requests.Unlock()
	offers.Unlock()
	checkRegistryEmpty(t)
}

// TestEqualRankPanics checks that two distinct locks of the same rank cannot
// be held together: the order must be strict.
func TestEqualRankPanics(t *testing.T) {
	peerA := newMutex("peerA", 15)
	peerB := newMutex("peerB", 15)

	peerA.Lock()
	err := mustPanic[*OrderError](t, peerB.Lock)
	want := OrderError{Acquiring: "peerB", AcquiringRank: 15, Held: "peerA", HeldRank: 15}
	if *err != want {
		t.Errorf("panic value = %+v, want %+v", *err, want)
	}
	checkUnlocked(t, peerB)
	peerA.Unlock()
	checkRegistryEmpty(t)
}

// TestReentryPanics checks that locking a held lock again on the same
// goroutine panics naming it, rather than deadlocking. The attempt runs on
// its own goroutine so that a deadlock fails the test with a clear message
// instead of hanging it; the timeout is only a backstop and does not order
// anything.
func TestReentryPanics(t *testing.T) {
	requests := newMutex("requests", rankRequests)

	result := make(chan any)
	go func() {
		requests.Lock()
		defer requests.Unlock()
		result <- recovered(requests.Lock)
	}()

	var v any
	select {
	case v = <-result:
	case <-time.After(time.Minute):
		t.Fatal("re-entrant Lock blocked instead of panicking")
	}
	err, ok := v.(*OrderError)
	if !ok {
		t.Fatalf("re-entrant Lock panicked with %T %v, want *OrderError", v, v)
	}
	want := OrderError{Acquiring: "requests", AcquiringRank: rankRequests, Held: "requests", HeldRank: rankRequests, Reentrant: true}
	if *err != want {
		t.Errorf("panic value = %+v, want %+v", *err, want)
	}
	const msg = `lockorder: acquiring "requests" (rank 20) twice on the same goroutine`
	if got := err.Error(); got != msg {
		t.Errorf("message = %q, want %q", got, msg)
	}

	// The goroutine's deferred Unlock ran after the send; taking the lock
	// here waits for it and shows the failed re-entry left it usable.
	requests.Lock()
	requests.AssertHeld()
	requests.Unlock()
	checkRegistryEmpty(t)
}

// TestReentryPreferredToOrder checks that re-acquiring a held lock is
// reported as re-entry even when a higher-ranked lock is also held.
func TestReentryPreferredToOrder(t *testing.T) {
	requests := newMutex("requests", rankRequests)
	callbacks := newMutex("callbacks", rankCallbacks)

	requests.Lock()
	callbacks.Lock()
	err := mustPanic[*OrderError](t, requests.Lock)
	if !err.Reentrant || err.Acquiring != "requests" || err.Held != "requests" {
		t.Errorf("panic value = %+v, want re-entry of \"requests\"", *err)
	}
	callbacks.Unlock()
	requests.Unlock()
	checkRegistryEmpty(t)
}

func TestUnlockUnheldPanics(t *testing.T) {
	offers := newMutex("offers", rankOffers)

	err := mustPanic[*UsageError](t, offers.Unlock)
	want := UsageError{Op: "Unlock", Name: "offers", Rank: rankOffers, Problem: "not held by the calling goroutine"}
	if *err != want {
		t.Errorf("panic value = %+v, want %+v", *err, want)
	}
	const msg = `lockorder: Unlock of "offers" (rank 10): not held by the calling goroutine`
	if got := err.Error(); got != msg {
		t.Errorf("message = %q, want %q", got, msg)
	}

	// Unlocking twice is the same mistake.
	offers.Lock()
	offers.AssertHeld()
	offers.Unlock()
	mustPanic[*UsageError](t, offers.Unlock)
	checkUnlocked(t, offers)
	checkRegistryEmpty(t)
}

// TestUnlockHeldByOtherGoroutinePanics checks that a lock another goroutine
// holds cannot be released here, and that the failed Unlock leaves it locked
// and still owned by that goroutine.
func TestUnlockHeldByOtherGoroutinePanics(t *testing.T) {
	offers := newMutex("offers", rankOffers)

	locked := make(chan struct{})
	release := make(chan struct{})
	done := make(chan any)
	go func() {
		offers.Lock()
		close(locked)
		<-release
		done <- recovered(offers.Unlock)
	}()

	<-locked
	mustPanic[*UsageError](t, offers.Unlock)
	mustPanic[*UsageError](t, offers.AssertHeld)
	checkLocked(t, offers)
	close(release)
	if v := <-done; v != nil {
		t.Fatalf("owner's Unlock panicked: %v", v)
	}
	checkUnlocked(t, offers)
	checkRegistryEmpty(t)
}

func TestAssertHeld(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)

	err := mustPanic[*UsageError](t, offers.AssertHeld)
	want := UsageError{Op: "AssertHeld", Name: "offers", Rank: rankOffers, Problem: "not held by the calling goroutine"}
	if *err != want {
		t.Errorf("panic value = %+v, want %+v", *err, want)
	}

	offers.Lock()
	offers.AssertHeld()
	mustPanic[*UsageError](t, requests.AssertHeld)
	requests.Lock()
	offers.AssertHeld()
	requests.AssertHeld()
	offers.Unlock()
	mustPanic[*UsageError](t, offers.AssertHeld)
	requests.AssertHeld()
	requests.Unlock()
	mustPanic[*UsageError](t, requests.AssertHeld)
	checkRegistryEmpty(t)
}

// TestGoroutinesAreSeparate has two goroutines hold locks at the same time
// in an order that would be a violation on one goroutine: the checks must
// apply per goroutine. Channels order the steps.
func TestGoroutinesAreSeparate(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)
	callbacks := newMutex("callbacks", rankCallbacks)

	holding := make(chan struct{})
	proceed := make(chan struct{})
	type outcome struct {
		held  []string // what the registry said the goroutine held
		panic any
	}
	done := make(chan outcome)
	go func() {
		var out outcome
		out.panic = recovered(func() {
			requests.Lock()
			close(holding)
			<-proceed
			// The main goroutine holds offers now; that must not count as
			// ours, and ours must still be recorded.
			requests.AssertHeld()
			callbacks.Lock()
			out.held = heldNames()
			callbacks.Unlock()
			requests.Unlock()
		})
		done <- out
	}()

	<-holding
	// The other goroutine holds requests (rank 20); taking offers (rank 10)
	// here is fine because we hold nothing.
	offers.Lock()
	checkHeld(t, "offers")
	mustPanic[*UsageError](t, requests.AssertHeld)
	close(proceed)
	out := <-done
	if out.panic != nil {
		t.Fatalf("other goroutine panicked: %v", out.panic)
	}
	if want := []string{"requests", "callbacks"}; !slices.Equal(out.held, want) {
		t.Errorf("registry said the other goroutine held %q, want %q", out.held, want)
	}
	offers.AssertHeld()
	offers.Unlock()
	checkRegistryEmpty(t)
}

// TestConsistentAfterRecoveredPanic provokes every kind of panic while
// holding locks, recovers each, and checks that the registry and the locks
// are exactly as before, so later locking still works and is still checked.
func TestConsistentAfterRecoveredPanic(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)
	callbacks := newMutex("callbacks", rankCallbacks)

	offers.Lock()
	callbacks.Lock()
	mustPanic[*OrderError](t, requests.Lock)
	checkHeld(t, "offers", "callbacks")
	mustPanic[*OrderError](t, callbacks.Lock)
	checkHeld(t, "offers", "callbacks")
	mustPanic[*UsageError](t, requests.Unlock)
	checkHeld(t, "offers", "callbacks")
	mustPanic[*UsageError](t, requests.AssertHeld)
	checkHeld(t, "offers", "callbacks")
	checkUnlocked(t, requests)
	checkLocked(t, offers)
	checkLocked(t, callbacks)
	callbacks.Unlock()
	offers.Unlock()
	checkRegistryEmpty(t)

	// The usual shape in real code: deferred unlocks run while the order
	// panic unwinds, and a recover further up stops it.
	v := recovered(func() {
		offers.Lock()
		defer offers.Unlock()
		callbacks.Lock()
		defer callbacks.Unlock()
		requests.Lock()
		defer requests.Unlock()
	})
	if _, ok := v.(*OrderError); !ok {
		t.Fatalf("panicked with %T %v, want *OrderError", v, v)
	}
	checkHeld(t)
	checkRegistryEmpty(t)
	checkUnlocked(t, offers)
	checkUnlocked(t, requests)
	checkUnlocked(t, callbacks)

	// Everything still works, and is still checked.
	offers.Lock()
	requests.Lock()
	callbacks.Lock()
	checkHeld(t, "offers", "requests", "callbacks")
	mustPanic[*OrderError](t, offers.Lock)
	callbacks.Unlock()
	requests.Unlock()
	offers.Unlock()
	checkRegistryEmpty(t)
}

func TestUninitialisedPanics(t *testing.T) {
	var m Mutex
	for _, tt := range []struct {
		op string
		f  func()
	}{
		{"Lock", m.Lock},
		{"Unlock", m.Unlock},
		{"AssertHeld", m.AssertHeld},
	} {
		err := mustPanic[*UsageError](t, tt.f)
		want := UsageError{Op: tt.op, Problem: "Init was not called"}
		if *err != want {
			t.Errorf("%s: panic value = %+v, want %+v", tt.op, *err, want)
		}
	}
	checkUnlocked(t, &m)
	checkRegistryEmpty(t)
}

func TestInitMisusePanics(t *testing.T) {
	var m Mutex
	err := mustPanic[*UsageError](t, func() { m.Init("", 1) })
	if want := (UsageError{Op: "Init", Problem: "name must not be empty"}); *err != want {
		t.Errorf("empty name: panic value = %+v, want %+v", *err, want)
	}

	m.Init("offers", rankOffers)
	err = mustPanic[*UsageError](t, func() { m.Init("requests", rankRequests) })
	if want := (UsageError{Op: "Init", Name: "offers", Rank: rankOffers, Problem: "Init called twice"}); *err != want {
		t.Errorf("second Init: panic value = %+v, want %+v", *err, want)
	}
	// The failed second Init must not have changed the name or rank.
	if m.name != "offers" || m.rank != rankOffers {
		t.Errorf("after second Init: name %q rank %d, want \"offers\" rank %d", m.name, m.rank, rankOffers)
	}
}

func TestGoid(t *testing.T) {
	id := goid()
	if again := goid(); again != id {
		t.Fatalf("goid() = %d then %d on the same goroutine", id, again)
	}
	other := make(chan uint64)
	go func() { other <- goid() }()
	if o := <-other; o == id {
		t.Fatalf("goid() = %d on two different goroutines", id)
	}
}

// The checked build runs the whole test suite: a Lock and Unlock must not
// allocate, or a flood of responses costs minutes instead of seconds.
func TestLockAndUnlockDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items, so this counts its allocations; CI runs it without -race too")
	}
	var outer, inner Mutex
	outer.Init("outer", 10)
	inner.Init("inner", 20)
	allocs := testing.AllocsPerRun(1000, func() {
		outer.Lock()
		inner.Lock()
		//lint:ignore SA2001 the cost of the locking itself is what is measured
		inner.Unlock()
		outer.Unlock()
	})
	if allocs != 0 {
		t.Fatalf("a nested Lock and Unlock allocated %v times", allocs)
	}
}

// TestAcquisitionsCountsLocks checks that a Mutex counts the times it was
// locked, on any goroutine, and not a Lock that panicked.
func TestAcquisitionsCountsLocks(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)
	if got := offers.Acquisitions(); got != 0 {
		t.Fatalf("Acquisitions before any Lock = %d, want 0", got)
	}
	for range 3 {
		offers.Lock()
		offers.AssertHeld()
		offers.Unlock()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		offers.Lock()
		offers.AssertHeld()
		offers.Unlock()
	}()
	<-done
	requests.Lock()
	mustPanic[*OrderError](t, offers.Lock)
	if got := offers.Acquisitions(); got != 4 {
		t.Errorf("offers.Acquisitions() = %d, want 4: three here, one on another goroutine, none for the Lock that panicked", got)
	}
	if got := requests.Acquisitions(); got != 1 {
		t.Errorf("requests.Acquisitions() = %d while held, want 1", got)
	}
	requests.Unlock()
	checkRegistryEmpty(t)
}

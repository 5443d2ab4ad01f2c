package lockorder

// Tests here run in both checked and unchecked builds: they cover behaviour
// that must not differ between the two.

import (
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The scheduler's lock order, mirrored here so the tests read like real use.
const (
	rankOffers    Rank = 10
	rankRequests  Rank = 20
	rankCallbacks Rank = 30
)

func newMutex(name string, rank Rank) *Mutex {
	m := new(Mutex)
	m.Init(name, rank)
	return m
}

func TestInOrderAcquisition(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)
	callbacks := newMutex("callbacks", rankCallbacks)

	offers.Lock()
	requests.Lock()
	callbacks.Lock()
	offers.AssertHeld()
	requests.AssertHeld()
	callbacks.AssertHeld()
	callbacks.Unlock()
	requests.Unlock()
	offers.Unlock()

	// Skipping a rank is fine; only increasing order matters.
	offers.Lock()
	callbacks.Lock()
	callbacks.AssertHeld()
	callbacks.Unlock()
	offers.Unlock()

	// Releasing out of acquisition order is allowed.
	offers.Lock()
	requests.Lock()
	offers.Unlock()
	requests.Unlock()
}

// TestMutualExclusion checks that Mutex still excludes: goroutines increment
// a plain counter under two nested locks, and the race detector (go test
// -race) would flag any unexcluded access.
func TestMutualExclusion(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)

	const goroutines, iterations = 4, 500
	counter := 0
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range iterations {
				offers.Lock()
				requests.Lock()
				counter++
				requests.Unlock()
				offers.Unlock()
			}
		})
	}
	wg.Wait()
	if want := goroutines * iterations; counter != want {
		t.Fatalf("counter = %d, want %d", counter, want)
	}
}

// TestCond checks that Mutex works as the sync.Locker of a sync.Cond, whose
// Wait unlocks and relocks on the waiting goroutine.
func TestCond(t *testing.T) {
	mu := newMutex("cond", rankCallbacks)
	cond := sync.NewCond(mu)
	ready := false

	done := make(chan struct{})
	go func() {
		defer close(done)
		mu.Lock()
		ready = true
		mu.Unlock()
		cond.Signal()
	}()

	mu.Lock()
	for !ready {
		cond.Wait()
	}
	mu.AssertHeld()
	mu.Unlock()
	<-done
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{
			&OrderError{Acquiring: "offers", AcquiringRank: 10, Held: "requests", HeldRank: 20},
			`lockorder: acquiring "offers" (rank 10) while holding "requests" (rank 20)`,
		},
		{
			&OrderError{Acquiring: "requests", AcquiringRank: 20, Held: "requests", HeldRank: 20, Reentrant: true},
			`lockorder: acquiring "requests" (rank 20) twice on the same goroutine`,
		},
		{
			&UsageError{Op: "Unlock", Name: "offers", Rank: 10, Problem: "not held by the calling goroutine"},
			`lockorder: Unlock of "offers" (rank 10): not held by the calling goroutine`,
		},
		{
			&UsageError{Op: "Lock", Problem: "Init was not called"},
			`lockorder: Lock of uninitialised Mutex: Init was not called`,
		},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

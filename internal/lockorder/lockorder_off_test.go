//go:build !lockorder

package lockorder

import (
	"sync"
	"testing"
	"unsafe"
)

func TestDisabledInUncheckedBuild(t *testing.T) {
	if Enabled {
		t.Fatal("Enabled = true in a build without the lockorder tag")
	}
}

// TestUncheckedIsPlainMutex checks that an unchecked build adds no storage:
// the name and rank passed to Init are dropped.
func TestUncheckedIsPlainMutex(t *testing.T) {
	if got, want := unsafe.Sizeof(Mutex{}), unsafe.Sizeof(sync.Mutex{}); got != want {
		t.Fatalf("unsafe.Sizeof(Mutex{}) = %d, want %d (sizeof sync.Mutex)", got, want)
	}
}

// TestUncheckedDoesNotCheck checks that misuse the checked build reports is
// silently allowed here, as it would be with a sync.Mutex.
func TestUncheckedDoesNotCheck(t *testing.T) {
	offers := newMutex("offers", rankOffers)
	requests := newMutex("requests", rankRequests)

	// Out of rank order.
	requests.Lock()
	offers.Lock()
	offers.AssertHeld()
	offers.Unlock()
	requests.Unlock()

	// AssertHeld of a lock nobody holds.
	offers.AssertHeld()

	// A Mutex that was never initialised, and one initialised twice.
	var bare Mutex
	bare.Lock()
	bare.AssertHeld()
	bare.Unlock()
	offers.Init("offers again", rankCallbacks)
	offers.Init("", 0)

	// Unlocking on a different goroutine than the one that locked, which
	// sync.Mutex permits.
	offers.Lock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		offers.Unlock()
	}()
	<-done
	// It really was released: this would block forever otherwise.
	offers.Lock()
	offers.AssertHeld()
	offers.Unlock()
}

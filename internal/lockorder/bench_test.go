package lockorder

import (
	"sync"
	"testing"
)

// BenchmarkLock measures an uncontended Lock/Unlock pair of a sync.Mutex and
// of a Mutex. Without the lockorder tag the two should be indistinguishable;
// with it, the difference is the cost of checking.
func BenchmarkLock(b *testing.B) {
	b.Run("impl=sync", func(b *testing.B) {
		var mu sync.Mutex
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			//lint:ignore SA2001 the cost of an empty critical section is what is measured
			mu.Unlock()
		}
	})
	b.Run("impl=lockorder", func(b *testing.B) {
		var mu Mutex
		mu.Init("bench", rankOffers)
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			//lint:ignore SA2001 the cost of an empty critical section is what is measured
			mu.Unlock()
		}
	})
}

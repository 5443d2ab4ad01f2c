package fetch

import (
	"slices"
	"sync"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

func TestMemStoreKeepsWhatIsPutFromManyGoroutines(t *testing.T) {
	var s MemStore
	if _, ok := s.Get(ledger.Hash{1}); ok || s.Len() != 0 {
		t.Fatal("the zero MemStore is not empty")
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { s.Put(ledger.Hash{byte(i)}, []byte{byte(i)}) })
	}
	wg.Wait()
	s.Put(ledger.Hash{3}, []byte{33}) // replaces
	if s.Len() != 8 {
		t.Fatalf("Len %d, want 8", s.Len())
	}
	if data, ok := s.Get(ledger.Hash{3}); !ok || !slices.Equal(data, []byte{33}) {
		t.Fatalf("Get = %v, %v", data, ok)
	}
	hashes := s.Hashes()
	slices.SortFunc(hashes, func(a, b ledger.Hash) int { return int(a[0]) - int(b[0]) })
	for i, h := range hashes {
		if h != (ledger.Hash{byte(i)}) {
			t.Fatalf("Hashes()[%d] = %v", i, h)
		}
	}
}

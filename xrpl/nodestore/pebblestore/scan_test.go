package pebblestore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// TestScan: Scan gives every node the store holds once, in ascending
// order of hash, with its bytes; it stops at the callback's first error
// and returns it; and a key that is not a hash is an error.
func TestScan(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	l, err := ledger.Generate(1, 2000)
	if err != nil {
		t.Fatal(err)
	}
	ld := s.NewLoader()
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		if err := ld.Add(h, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := ld.Flush(); err != nil {
		t.Fatal(err)
	}
	ld.Close()

	seen := 0
	var last ledger.Hash
	err = s.Scan(func(h ledger.Hash, node []byte) error {
		if seen > 0 && bytes.Compare(h[:], last[:]) <= 0 {
			t.Fatalf("%s after %s", h, last)
		}
		if want, ok := l.Get(h); !ok || !bytes.Equal(node, want) {
			t.Fatalf("%s: %d bytes, not the ledger's node (%v)", h, len(node), ok)
		}
		seen++
		last = h
		return nil
	})
	if err != nil || seen != l.Len() {
		t.Fatalf("Scan: %d nodes, %v; want the ledger's %d", seen, err, l.Len())
	}

	stop := errors.New("stop")
	seen = 0
	err = s.Scan(func(ledger.Hash, []byte) error {
		if seen++; seen == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || seen != 10 {
		t.Fatalf("Scan after its callback failed at the 10th node: %d nodes, %v", seen, err)
	}

	if err := s.db.Set([]byte("short"), []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Scan(func(ledger.Hash, []byte) error { return nil }); err == nil || err.Error() != "pebblestore: a key of 5 bytes, not a hash" {
		t.Fatalf("Scan of a store with a key not a hash: %v", err)
	}
}

package pebblestore

import (
	"bytes"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// TestLoaderCopies: a Loader keeps every node added, even though the
// caller reuses one buffer for all of them, commits them in batches as it
// goes and the rest at Flush; what was added after the last Flush is not
// kept. Peek reads a node back as stored, and a value that does not hash
// to its key as it is, where Get reads it as absent.
func TestLoaderCopies(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	l, err := ledger.Generate(1, 20_000) // some 7 MB: more than one batch
	if err != nil {
		t.Fatal(err)
	}
	ld := s.NewLoader()
	var buf []byte
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		buf = append(buf[:0], data...)
		if err := ld.Add(h, buf); err != nil {
			t.Fatal(err)
		}
		clear(buf)
	}
	if err := ld.Flush(); err != nil {
		t.Fatal(err)
	}
	lost := leafOf(t, 7)
	if err := ld.Add(lost.Hash, lost.Data); err != nil {
		t.Fatal(err)
	}
	ld.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, dir)
	defer s.Close()
	if n, err := s.Count(); n != l.Len() || err != nil {
		t.Fatalf("the store holds %d values (%v), want the ledger's %d nodes", n, err, l.Len())
	}
	for h := range l.Hashes() {
		want, _ := l.Get(h)
		if got, ok := s.Peek(h); !ok || !bytes.Equal(got, want) {
			t.Fatalf("Peek %s: %v", h, ok)
		}
	}
	if _, ok := s.Peek(lost.Hash); ok {
		t.Fatal("a node added after the last Flush was kept")
	}
	bad := fetch.Node{Hash: lost.Hash, Data: []byte("not the node")}
	if err := s.Write([]fetch.Node{bad}); err != nil {
		t.Fatal(err)
	}
	if got, ok := s.Peek(bad.Hash); !ok || !bytes.Equal(got, bad.Data) {
		t.Fatalf("Peek of a value that does not verify: %q, %v", got, ok)
	}
	if _, ok := s.Get(bad.Hash); ok {
		t.Fatal("Get returned a value that does not verify")
	}
}

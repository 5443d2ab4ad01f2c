package flatstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// node is a node to store: its hash and bytes.
type node struct {
	h    ledger.Hash
	data []byte
}

// nodesOf returns the nodes of a generated ledger of n entries, in
// ascending order of hash, as Build wants them.
func nodesOf(t *testing.T, n int) []node {
	t.Helper()
	l, err := ledger.Generate(1, n)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []node
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		nodes = append(nodes, node{h, data})
	}
	slices.SortFunc(nodes, func(a, b node) int { return bytes.Compare(a.h[:], b.h[:]) })
	return nodes
}

// each gives nodes to Build's add, reusing one buffer for all of them as
// an iterator over a store does.
func each(nodes []node) func(add func(ledger.Hash, []byte) error) error {
	return func(add func(ledger.Hash, []byte) error) error {
		var buf []byte
		for _, n := range nodes {
			buf = append(buf[:0], n.data...)
			if err := add(n.h, buf); err != nil {
				return err
			}
			clear(buf)
		}
		return nil
	}
}

// build writes nodes to a file in a temporary directory and opens it.
func build(t *testing.T, nodes []node, expect uint64) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "nodes.flat")
	tag := ledger.HashOf([]byte("tag"))
	h, err := Build(path, tag, expect, each(nodes))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Header() != h || h.Tag != tag || h.Count != uint64(len(nodes)) || h.Bits != bucketBits(expect) {
		t.Fatalf("header %+v, Build said %+v; want tag %s, %d nodes, %d bits", s.Header(), h, tag, len(nodes), bucketBits(expect))
	}
	return s, path
}

// TestRoundTrip: every node built into a file is found, byte for byte,
// with as many buckets as its count asks for, with one bucket for all
// (a count expected far too low), and with many more buckets than nodes;
// a hash not in the file, in a bucket with nodes or an empty one, is not
// found.
func TestRoundTrip(t *testing.T) {
	nodes := nodesOf(t, 3000)
	absent := []ledger.Hash{ledger.HashOf([]byte("absent")), {}, {0xff, 0xff, 0xff, 0xff}}
	for _, n := range nodes[:100] {
		h := n.h
		h[31] ^= 1 // beside a node held, in its bucket
		absent = append(absent, h)
	}
	for _, c := range []struct {
		nodes  []node
		expect uint64
	}{
		{nodes, uint64(len(nodes))},
		{nodes[:300], 0}, // one bucket: each lookup reads every node
		{nodes, 1 << 20},
	} {
		expect := c.expect
		s, _ := build(t, c.nodes, expect)
		for _, n := range c.nodes {
			got, err := s.Lookup(n.h)
			if err != nil || !bytes.Equal(got, n.data) {
				t.Fatalf("expect %d: Lookup %s: %v, %d bytes; want its %d bytes", expect, n.h, err, len(got), len(n.data))
			}
			if got, ok := s.Get(n.h); !ok || !bytes.Equal(got, n.data) {
				t.Fatalf("expect %d: Get %s: %v", expect, n.h, ok)
			}
		}
		for _, h := range absent {
			if got, err := s.Lookup(h); !errors.Is(err, ErrNotFound) {
				t.Fatalf("expect %d: Lookup of %s, not held: %d bytes, %v; want ErrNotFound", expect, h, len(got), err)
			}
			if _, ok := s.Get(h); ok {
				t.Fatalf("expect %d: Get of %s, not held, found it", expect, h)
			}
		}
	}
}

// TestLookupCopies: what Lookup returns is the caller's; the next lookup,
// which reuses the buffer the bucket was read into, does not change it.
func TestLookupCopies(t *testing.T) {
	nodes := nodesOf(t, 200)
	s, _ := build(t, nodes, 1) // one bucket: every lookup reads all of it
	first, err := s.Lookup(nodes[0].h)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes[1:] {
		if _, err := s.Lookup(n.h); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(first, nodes[0].data) {
		t.Fatal("a node returned changed after later lookups")
	}
}

// TestEmpty: a file of no nodes finds nothing.
func TestEmpty(t *testing.T) {
	s, _ := build(t, nil, 0)
	if _, err := s.Lookup(ledger.HashOf(nil)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup in an empty file: %v", err)
	}
}

// TestConcurrentLookups: lookups from many goroutines at once each find
// their node (the race detector checks the buffers they share a pool of).
func TestConcurrentLookups(t *testing.T) {
	nodes := nodesOf(t, 2000)
	s, _ := build(t, nodes, uint64(len(nodes)))
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < len(nodes); i += 8 {
				got, err := s.Lookup(nodes[i].h)
				if err == nil && !bytes.Equal(got, nodes[i].data) {
					err = errors.New("wrong bytes for " + nodes[i].h.Hex())
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestBuildFailsCleanly: a build whose nodes come out of order (whether
// or not its source heeds add's error), twice, or whose source fails,
// returns that error and leaves the file at its path as it was, and no
// temporary file.
func TestBuildFailsCleanly(t *testing.T) {
	nodes := nodesOf(t, 100)
	_, path := build(t, nodes[:10], 10)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	failed := errors.New("the source failed")
	swapped := slices.Clone(nodes)
	swapped[40], swapped[41] = swapped[41], swapped[40]
	for _, c := range []struct {
		name string
		each func(add func(ledger.Hash, []byte) error) error
		says string
	}{
		{"out of order", each(swapped), "want ascending hashes"},
		{"twice", each(append(slices.Clone(nodes[:50]), nodes[49:]...)), "want ascending hashes"},
		{"out of order, the error ignored", func(add func(ledger.Hash, []byte) error) error {
			for _, n := range swapped {
				_ = add(n.h, n.data) // a careless source goes on
			}
			return nil
		}, "want ascending hashes"},
		{"source failed", func(add func(ledger.Hash, []byte) error) error {
			if err := each(nodes[:30])(add); err != nil {
				return err
			}
			return failed
		}, failed.Error()},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(path, ledger.Hash{}, 100, c.each)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("Build: %v; want an error saying %q", err, c.says)
			}
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(after, before) {
				t.Fatalf("the file at the path changed (%v)", err)
			}
			if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
				t.Fatalf("the temporary file is left: %v", err)
			}
		})
	}
}

// TestOpenRejects: a file cut short anywhere, grown, with a damaged table,
// or not a flat store at all, does not open, and the error says why.
func TestOpenRejects(t *testing.T) {
	nodes := nodesOf(t, 500)
	s, path := build(t, nodes, uint64(len(nodes)))
	h := s.Header()
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tableAt := headerSize + int(h.DataBytes)
	flipped := func(at int) []byte {
		b := slices.Clone(whole)
		b[at] ^= 0x40
		return b
	}
	for _, c := range []struct {
		name string
		b    []byte
		says string
	}{
		{"empty", nil, "shorter than a header"},
		{"a header cut short", whole[:headerSize/2], "shorter than a header"},
		{"the header alone", whole[:headerSize], "its header describes"},
		{"cut in the data", whole[:tableAt/2], "its header describes"},
		{"cut in the table", whole[:tableAt+8], "its header describes"},
		{"a byte short", whole[:len(whole)-1], "its header describes"},
		{"a byte more", append(slices.Clone(whole), 0), "its header describes"},
		{"the table damaged", flipped(tableAt + 8*3 + 1), "the table's checksum"},
		{"the header damaged", flipped(offDataBytes), "the header's checksum"},
		{"not a flat store", []byte(strings.Repeat("not a flat store file ", 10)), `does not begin with "XRPLFLAT"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.flat")
			if err := os.WriteFile(bad, c.b, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Open(bad)
			if err == nil {
				_ = s.Close()
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), bad) {
				t.Fatalf("Open: %v; want ErrFormat naming the file and saying %q", err, c.says)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none")); err == nil || errors.Is(err, ErrFormat) || !os.IsNotExist(errors.Unwrap(err)) {
		t.Fatalf("Open of no file: %v; want the file system's not-exist error", err)
	}
}

// TestDamagedBucket: an entry whose length runs past its bucket (written
// over since the file was built) is reported by the lookups that reach
// it, as ErrFormat naming the bucket; entries before it are still found.
func TestDamagedBucket(t *testing.T) {
	nodes := nodesOf(t, 200)
	_, path := build(t, nodes, 1) // one bucket: the nodes in order
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The length of the third entry.
	at := int64(headerSize + 2*entryHead + len(nodes[0].data) + len(nodes[1].data) + ledger.HashSize)
	var huge [4]byte
	binary.LittleEndian.PutUint32(huge[:], 1<<30)
	if _, err := f.WriteAt(huge[:], at); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path) // the header and table still check
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, err := s.Lookup(nodes[1].h); err != nil || !bytes.Equal(got, nodes[1].data) {
		t.Fatalf("Lookup of the entry before the damage: %v", err)
	}
	for _, n := range []node{nodes[2], nodes[100]} {
		if _, err := s.Lookup(n.h); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "bucket 0") || !strings.Contains(err.Error(), "past the bucket's end") {
			t.Fatalf("Lookup past the damage: %v; want ErrFormat naming bucket 0", err)
		}
		if _, ok := s.Get(n.h); ok {
			t.Fatal("Get found a node past the damage")
		}
	}
}

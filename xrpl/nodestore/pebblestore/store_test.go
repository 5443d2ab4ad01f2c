package pebblestore

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// leafOf returns a real node (a ledger's only leaf) and its hash.
func leafOf(t *testing.T, seed uint64) fetch.Node {
	t.Helper()
	l, err := ledger.Generate(seed, 1)
	if err != nil {
		t.Fatal(err)
	}
	data, ok := l.Get(l.Root())
	if !ok {
		t.Fatal("the generated ledger lacks its root")
	}
	return fetch.Node{Hash: l.Root(), Data: data}
}

// shuffledNodes returns the nodes of a generated ledger of leaves leaves in
// no order of their keys, as a fetch writes them: each file Pebble
// flushes then overlaps the others, which is what it merges. (In the
// order of their keys, the files would not overlap, and nothing would
// need merging.)
func shuffledNodes(tb testing.TB, leaves int) []fetch.Node {
	tb.Helper()
	l, err := ledger.Generate(1, leaves)
	if err != nil {
		tb.Fatal(err)
	}
	var nodes []fetch.Node
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		nodes = append(nodes, fetch.Node{Hash: h, Data: data})
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	return nodes
}

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGetVerifies: Get returns a value only if it hashes to its key; one
// that does not (another node's bytes, a truncated or altered copy, nothing
// at all) reads as absent.
func TestGetVerifies(t *testing.T) {
	good, other := leafOf(t, 1), leafOf(t, 2)
	altered := bytes.Clone(good.Data)
	altered[len(altered)-1] ^= 1
	for _, c := range []struct {
		name   string
		stored []byte // nil: nothing stored under good.Hash
		found  bool
	}{
		{"absent", nil, false},
		{"the node", good.Data, true},
		{"another node's bytes", other.Data, false},
		{"half written", good.Data[:len(good.Data)/2], false},
		{"one bit flipped", altered, false},
		{"empty", []byte{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, t.TempDir())
			defer s.Close()
			if c.stored != nil {
				if err := s.Write([]fetch.Node{{Hash: good.Hash, Data: c.stored}}); err != nil {
					t.Fatal(err)
				}
			}
			data, ok := s.Get(good.Hash)
			if ok != c.found || (ok && !bytes.Equal(data, good.Data)) {
				t.Fatalf("Get = %d bytes, %v; want found %v", len(data), ok, c.found)
			}
		})
	}
}

// TestKeepsAcrossReopen: what Write returned from is there after Close and
// Open, and Count counts it.
func TestKeepsAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	nodes := []fetch.Node{leafOf(t, 1), leafOf(t, 2), leafOf(t, 3)}
	s := open(t, dir)
	if err := s.Write(nodes[:2]); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(nodes[2:]); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	for _, n := range nodes {
		if data, ok := s.Get(n.Hash); !ok || !bytes.Equal(data, n.Data) {
			t.Fatalf("node %s: %v", n.Hash, ok)
		}
	}
	if n, err := s.Count(); n != 3 || err != nil {
		t.Fatalf("Count = %d, %v", n, err)
	}
}

// TestCompactMergesLevelZero: writes leave every flushed file in level 0,
// merging none (a fetch's bulk load); Compact merges them all, and every
// node reads back the same before and after.
func TestCompactMergesLevelZero(t *testing.T) {
	defer func(was uint64) { memTableBytes = was }(memTableBytes)
	memTableBytes = 256 << 10 // several flushes from a small ledger
	nodes := shuffledNodes(t, 4_000)
	s := open(t, t.TempDir())
	defer s.Close()
	for i := 0; i < len(nodes); i += 500 {
		if err := s.Write(nodes[i:min(i+500, len(nodes))]); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	readsBack := func(when string) {
		for _, n := range nodes {
			if data, ok := s.Get(n.Hash); !ok || !bytes.Equal(data, n.Data) {
				t.Fatalf("%s: node %s: %v", when, n.Hash, ok)
			}
		}
		if n, err := s.Count(); n != len(nodes) || err != nil {
			t.Fatalf("%s: Count = %d, %v; want %d", when, n, err, len(nodes))
		}
	}
	m := s.db.Metrics()
	if files := m.Levels[0].TablesCount; files < 4 || m.Compact.Count != 0 || m.Compact.NumInProgress != 0 {
		t.Fatalf("after writing %d nodes: %d files in level 0, %d merges; want at least 4 files and no merge", len(nodes), files, m.Compact.Count)
	}
	readsBack("before Compact")
	if err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if files := s.db.Metrics().Levels[0].TablesCount; files != 0 {
		t.Fatalf("after Compact: %d files in level 0, want 0", files)
	}
	readsBack("after Compact")
}

// TestOpenFails: a directory that cannot be one (a file's path) is an
// error, not a panic.
func TestOpenFails(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	if _, err := Open("/dev/null/store"); err == nil {
		t.Fatal("opened a store under /dev/null")
	}
}

package ledger

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"testing"
)

// TestGenerateStreamMatchesGenerate: for the same (seed, count), the
// streamed ledger is Generate's, node for node and byte for byte: the same
// root, counts and size, every emitted node is one of Generate's with the
// same bytes, none twice, children before their parent and the root last.
func TestGenerateStreamMatchesGenerate(t *testing.T) {
	for _, c := range []struct {
		seed    uint64
		objects int
	}{{0, 1}, {1, 2}, {3, 17}, {7, 300}, {42, 5000}} {
		l, err := Generate(c.seed, c.objects)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[Hash]bool{}
		var last Hash
		sum, err := GenerateStream(c.seed, c.objects, func(h Hash, data []byte) error {
			want, ok := l.Get(h)
			if !ok || !bytes.Equal(data, want) {
				t.Fatalf("seed %d, %d objects: node %s is not Generate's", c.seed, c.objects, h)
			}
			if seen[h] {
				t.Fatalf("seed %d, %d objects: node %s emitted twice", c.seed, c.objects, h)
			}
			n, err := Decode(data)
			if err != nil {
				t.Fatal(err)
			}
			for _, child := range n.Children {
				if !seen[child] {
					t.Fatalf("node %s emitted before its child %s", h, child)
				}
			}
			seen[h], last = true, h
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want := Summary{Root: l.Root(), Leaves: l.Leaves(), Nodes: l.Len(), Size: l.Size()}
		if sum != want || len(seen) != l.Len() || last != l.Root() {
			t.Fatalf("seed %d, %d objects: streamed %+v (%d distinct, last %s), Generate %+v", c.seed, c.objects, sum, len(seen), last, want)
		}
	}
}

// TestGenerateStreamPinned pins the root of a small generated ledger, so
// that a change to how ledgers are drawn or built, which would silently
// change every ledger a peer serves from its store, fails here.
func TestGenerateStreamPinned(t *testing.T) {
	const want = "abf5eb3f8cf38ed37a28427ccceac2b27ecf0875b1902bf14489daff62185a06"
	sum, err := GenerateStream(1, 10_000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Root.Hex() != want || sum.Nodes != 13_903 {
		t.Fatalf("seed 1, 10,000 objects: root %s, %d nodes; want %s", sum.Root.Hex(), sum.Nodes, want)
	}
}

// TestGenerateStreamLarge checks a large count against Generate, outside
// CI: LEDGER_STREAM_CHECK=4000000 go test -run GenerateStreamLarge.
func TestGenerateStreamLarge(t *testing.T) {
	v := os.Getenv("LEDGER_STREAM_CHECK")
	if v == "" {
		t.Skip("set LEDGER_STREAM_CHECK to an object count (up to MaxObjects) to run")
	}
	objects, err := strconv.Atoi(v)
	if err != nil {
		t.Fatal(err)
	}
	l, err := Generate(1, objects)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := GenerateStream(1, objects, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Root != l.Root() || sum.Nodes != l.Len() || sum.Size != l.Size() {
		t.Fatalf("streamed %+v, Generate root %s, %d nodes, %d bytes", sum, l.Root().Hex(), l.Len(), l.Size())
	}
	t.Logf("seed 1, %d objects: root %s, %d nodes", objects, sum.Root.Hex(), sum.Nodes)
}

// TestGenerateStreamErrors: a count out of range is refused before
// anything is emitted, and emit's error stops the build and is returned.
func TestGenerateStreamErrors(t *testing.T) {
	for _, n := range []int{0, -1, MaxStreamObjects + 1} {
		if _, err := GenerateStream(1, n, func(Hash, []byte) error { t.Fatal("emitted"); return nil }); !errors.Is(err, ErrObjects) {
			t.Fatalf("%d objects: %v, want ErrObjects", n, err)
		}
	}
	full := errors.New("disk full")
	calls := 0
	_, err := GenerateStream(1, 1000, func(Hash, []byte) error {
		calls++
		if calls == 10 {
			return full
		}
		return nil
	})
	if !errors.Is(err, full) || calls != 10 {
		t.Fatalf("after %d calls: %v, want the emit's error at the tenth", calls, err)
	}
}

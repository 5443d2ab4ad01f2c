package ledger

import (
	"bytes"
	"crypto/sha512"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// walk fetches the whole tree from root the way a fetcher would, checking
// every node against its name, and returns the hashes it reached and the
// number of leaves among them.
func walk(t *testing.T, l *Ledger) (seen map[Hash]bool, leaves int) {
	t.Helper()
	seen = map[Hash]bool{}
	todo := []Hash{l.Root()}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		require.False(t, seen[h], "node %s reached twice", h)
		seen[h] = true
		data, ok := l.Get(h)
		require.True(t, ok, "node %s not in ledger", h)
		require.True(t, Verify(h, data), "node %s fails Verify", h)
		n, err := Decode(data)
		require.NoError(t, err)
		switch n.Kind {
		case Leaf:
			leaves++
			require.GreaterOrEqual(t, len(n.Payload), MinPayload)
			require.LessOrEqual(t, len(n.Payload), MaxPayload)
		case Inner:
			require.Len(t, n.Children, popcount(n.Branches))
			todo = append(todo, n.Children...)
		default:
			t.Fatalf("node %s has kind %v", h, n.Kind)
		}
	}
	return seen, leaves
}

func popcount(x uint16) int {
	c := 0
	for ; x != 0; x &= x - 1 {
		c++
	}
	return c
}

func TestGenerateWalk(t *testing.T) {
	for _, objects := range []int{1, 2, 17, 1000, 20000} {
		l, err := Generate(7, objects)
		require.NoError(t, err)
		seen, leaves := walk(t, l)
		require.Equal(t, objects, leaves, "leaves reached")
		require.Equal(t, objects, l.Leaves())
		require.Equal(t, len(seen), l.Len(), "Len must equal the nodes a walk reaches")

		var size int64
		n := 0
		for h := range l.Hashes() {
			require.True(t, seen[h], "node %s not reachable from the root", h)
			data, _ := l.Get(h)
			size += int64(len(data))
			n++
		}
		require.Equal(t, l.Len(), n)
		require.Equal(t, size, l.Size())
	}
}

// TestLeafPlacement checks the shape: each leaf sits under the inner nodes
// that its key's nibbles lead to, and no inner node below the root holds a
// single leaf (that leaf would have been placed one level up).
func TestLeafPlacement(t *testing.T) {
	l, err := Generate(3, 5000)
	require.NoError(t, err)
	var visit func(h Hash, depth int, path []int)
	visit = func(h Hash, depth int, path []int) {
		data, _ := l.Get(h)
		n, err := Decode(data)
		require.NoError(t, err)
		if n.Kind == Leaf {
			for d, b := range path {
				require.Equal(t, b, nibble(n.Key, d), "leaf %s at depth %d on the wrong branch", h, d)
			}
			return
		}
		i := 0
		for b := range 16 {
			if n.Branches&(1<<b) == 0 {
				continue
			}
			child := n.Children[i]
			i++
			if depth > 0 && len(n.Children) == 1 {
				cd, _ := l.Get(child)
				cn, err := Decode(cd)
				require.NoError(t, err)
				require.Equal(t, Inner, cn.Kind, "inner node %s below the root holds a lone leaf", h)
			}
			visit(child, depth+1, append(path, b))
		}
	}
	visit(l.Root(), 0, nil)
}

func TestDeterminism(t *testing.T) {
	a, err := Generate(42, 3000)
	require.NoError(t, err)
	b, err := Generate(42, 3000)
	require.NoError(t, err)
	require.Equal(t, a.Root(), b.Root())
	require.Equal(t, a.Len(), b.Len())
	require.Equal(t, a.Size(), b.Size())

	c, err := Generate(43, 3000)
	require.NoError(t, err)
	require.NotEqual(t, a.Root(), c.Root())
	_, ok := c.Get(a.Root())
	require.False(t, ok, "another seed's ledger has this root")

	d, err := Generate(42, 3001)
	require.NoError(t, err)
	require.NotEqual(t, a.Root(), d.Root())
}

// TestRootMatchesNaiveRebuild rebuilds the tree from the ledger's leaves by
// inserting them one at a time into a pointer trie (the textbook way, sharing
// no code with Generate, serialization and hashing included) and checks that
// it arrives at the same root: the shape Generate builds in one sorted pass
// is the canonical one.
func TestRootMatchesNaiveRebuild(t *testing.T) {
	for _, objects := range []int{1, 2, 300, 4000} {
		l, err := Generate(11, objects)
		require.NoError(t, err)
		root := &trie{}
		var leaves [][]byte
		for h := range l.Hashes() {
			data, _ := l.Get(h)
			if bytes.HasPrefix(data, []byte("MLN\x00")) {
				leaves = append(leaves, data)
			}
		}
		require.Len(t, leaves, objects)
		for _, data := range leaves {
			root.insert(data, 0)
		}
		require.Equal(t, l.Root(), root.hash(), "objects=%d", objects)
	}
}

type trie struct {
	kids [16]*trie
	leaf []byte // serialized leaf, for a leaf node
}

func (n *trie) insert(leaf []byte, depth int) {
	key := leaf[len(leaf)-32:]
	digit := func(k []byte, d int) int { return int(k[d/2]>>(4*(1-d%2))) & 15 }
	b := digit(key, depth)
	switch kid := n.kids[b]; {
	case kid == nil:
		n.kids[b] = &trie{leaf: leaf}
	case kid.leaf != nil:
		split := &trie{}
		split.insert(kid.leaf, depth+1)
		split.insert(leaf, depth+1)
		n.kids[b] = split
	default:
		kid.insert(leaf, depth+1)
	}
}

func (n *trie) hash() Hash {
	half := func(b []byte) Hash {
		sum := sha512.Sum512(b)
		return Hash(sum[:32])
	}
	if n.leaf != nil {
		return half(n.leaf)
	}
	body := []byte("MIN\x00")
	for _, kid := range n.kids {
		var h Hash
		if kid != nil {
			h = kid.hash()
		}
		body = append(body, h[:]...)
	}
	return half(body)
}

func TestOneObject(t *testing.T) {
	l, err := Generate(0, 1)
	require.NoError(t, err)
	require.Equal(t, 2, l.Len(), "a root and its one leaf")
	require.Equal(t, 1, l.Leaves())
	data, ok := l.Get(l.Root())
	require.True(t, ok)
	n, err := Decode(data)
	require.NoError(t, err)
	require.Equal(t, Inner, n.Kind, "the root is inner even with one object")
	require.Len(t, n.Children, 1)
	leaf, ok := l.Get(n.Children[0])
	require.True(t, ok)
	ln, err := Decode(leaf)
	require.NoError(t, err)
	require.Equal(t, Leaf, ln.Kind)
	require.Equal(t, uint16(1)<<nibble(ln.Key, 0), n.Branches, "the leaf hangs on its key's first nibble")
}

func TestGenerateBadCount(t *testing.T) {
	for _, objects := range []int{0, -1, MaxObjects + 1} {
		l, err := Generate(1, objects)
		require.ErrorIs(t, err, ErrObjects, "objects=%d", objects)
		require.Nil(t, l)
	}
}

func TestGetUnknown(t *testing.T) {
	l, err := Generate(1, 100)
	require.NoError(t, err)
	_, ok := l.Get(Hash{})
	require.False(t, ok)
	h := l.Root()
	h[31] ^= 1
	_, ok = l.Get(h)
	require.False(t, ok)

	for probe := range l.Hashes() {
		probe[31] ^= 0x80
		_, ok = l.Get(probe)
		require.False(t, ok, "found a neighbour of a real hash")
	}
	_, ok = l.Get(Hash{0xff, 0xff, 0xff, 0xff, 0xff})
	require.False(t, ok)

	var zero Ledger
	_, ok = zero.Get(h)
	require.False(t, ok)
	require.Equal(t, 0, zero.Len())
	require.Equal(t, Hash{}, zero.Root())
}

// TestGetIsolated checks that a caller appending to one node's bytes cannot
// overwrite its neighbour in the shared arena.
func TestGetIsolated(t *testing.T) {
	l, err := Generate(1, 100)
	require.NoError(t, err)
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		_ = append(data, 0xff)
	}
	walk(t, l)
}

func TestConcurrentReads(t *testing.T) {
	l, err := Generate(5, 2000)
	require.NoError(t, err)
	done := make(chan int)
	for range 4 {
		go func() {
			n := 0
			for h := range l.Hashes() {
				if data, ok := l.Get(h); ok && Verify(h, data) {
					n++
				}
			}
			done <- n
		}()
	}
	for range 4 {
		require.Equal(t, l.Len(), <-done)
	}
}

func TestAnswer(t *testing.T) {
	l, err := Generate(1, 50)
	require.NoError(t, err)
	missing := Hash{1, 2, 3}
	resp := l.Answer(GetObjects{Hashes: []Hash{missing, l.Root(), missing}})
	require.Len(t, resp.Items, 1, "hashes the ledger lacks are left out")
	require.Equal(t, l.Root(), resp.Items[0].Hash)
	require.True(t, Verify(l.Root(), resp.Items[0].Data))

	require.Empty(t, l.Answer(GetObjects{}).Items)
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrObjects, ErrMalformed, ErrDuplicateKey, ErrHashMismatch, ErrBadFile}
	for i, a := range all {
		for j, b := range all {
			require.Equal(t, i == j, errors.Is(a, b), "%v, %v", a, b)
		}
	}
}

func BenchmarkGenerate200k(b *testing.B) {
	for b.Loop() {
		if _, err := Generate(1, 200_000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGet(b *testing.B) {
	l, err := Generate(1, 200_000)
	if err != nil {
		b.Fatal(err)
	}
	var hashes []Hash
	for h := range l.Hashes() {
		hashes = append(hashes, h)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, ok := l.Get(hashes[(i*7919)%len(hashes)]); !ok {
			b.Fatal("missing")
		}
	}
}

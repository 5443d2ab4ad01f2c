package ledger

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// MaxStreamObjects is the largest object count GenerateStream accepts. It
// holds one sixteenth of the keys at a time, 32 bytes each: about 130 MB at
// this count, three and a half times the XRP Ledger mainnet's 19 million
// entries.
const MaxStreamObjects = 1 << 26

// Summary describes a state map built by GenerateStream.
type Summary struct {
	Root   Hash  // the root node's hash, as Ledger.Root
	Leaves int   // the map's entries, as Ledger.Leaves
	Nodes  int   // inner nodes and leaves, as Ledger.Len
	Size   int64 // serialized bytes of all nodes, as Ledger.Size
}

// GenerateStream builds the ledger Generate(seed, objects) builds, node for
// node and byte for byte, without holding it: each node goes to emit as it
// is sealed, children before their parent, the root last, and is forgotten.
// emit's data is valid only during the call. A nil emit only computes the
// Summary (the root, for a fetcher that must know what to ask for).
//
// The keys are drawn as Generate draws them, in sixteen passes over the
// random source, each keeping the keys under one branch of the root, so
// that about a sixteenth of them is held at once (objects/16 × 32 bytes);
// each pass builds that branch bottom-up in key order, drawing the entries'
// data where Generate would. It takes about as long as Generate and a
// fraction of its memory, which is how a ledger of mainnet's size (19
// million entries, about 26 million nodes) fits a small machine.
//
// It returns an error wrapping ErrObjects if objects is below 1 or above
// MaxStreamObjects, and emit's first error, wrapped, as soon as it fails.
func GenerateStream(seed uint64, objects int, emit func(h Hash, data []byte) error) (Summary, error) {
	if objects < 1 || objects > MaxStreamObjects {
		return Summary{}, fmt.Errorf("%w: %d (want 1 to %d)", ErrObjects, objects, MaxStreamObjects)
	}
	if emit == nil {
		emit = func(Hash, []byte) error { return nil }
	}
	// Generate's source draws every key first, then the entries' data in
	// key order. The key passes replay the first part from a copy of the
	// source each; data is drawn from where the keys end, which the first
	// pass finds.
	start := *rand.NewPCG(seed, pcgStream)
	var data *rand.Rand
	s := streamer{emit: emit}
	var root [16]Hash
	for branch := range 16 {
		src := start
		rng := rand.New(&src)
		s.keys = s.keys[:0]
		var key Hash
		for range objects {
			fillRandom(rng, key[:])
			if nibble(key, 0) == branch {
				s.keys = append(s.keys, key)
			}
		}
		if data == nil {
			rest := src
			data = rand.New(&rest)
			s.appendData = func(dst []byte) []byte {
				n := drawEntrySize(data)
				dst = slices.Grow(dst, n)[:len(dst)+n]
				fillRandom(data, dst[len(dst)-n:])
				return dst
			}
		}
		slices.SortFunc(s.keys, compareHash)
		for i := 1; i < len(s.keys); i++ {
			if s.keys[i] == s.keys[i-1] {
				return Summary{}, fmt.Errorf("ledger: seed %d drew a key twice: %w: %s", seed, ErrDuplicateKey, s.keys[i].Hex())
			}
		}
		var err error
		switch len(s.keys) {
		case 0:
		case 1:
			root[branch], err = s.leaf(0)
		default:
			root[branch], err = s.inner(0, len(s.keys), 1)
		}
		if err != nil {
			return Summary{}, err
		}
	}
	h, err := s.seal(appendInner(s.buf[:0], &root))
	if err != nil {
		return Summary{}, err
	}
	return Summary{Root: h, Leaves: objects, Nodes: s.nodes, Size: s.size}, nil
}

// errEmit wraps what GenerateStream's emit returned.
var errEmit = errors.New("ledger: emitting a node")

// streamer builds subtrees bottom-up over sorted keys, as builder does, but
// hands each node to emit instead of keeping it.
type streamer struct {
	keys       []Hash
	appendData func(dst []byte) []byte
	emit       func(Hash, []byte) error
	buf        []byte // the node being sealed
	nodes      int
	size       int64
}

// inner builds the inner node at depth (at least 1) over keys[lo:hi], two
// keys or more, and returns its hash. It shapes the tree as builder.inner.
func (s *streamer) inner(lo, hi, depth int) (Hash, error) {
	var children [16]Hash
	for i := lo; i < hi; {
		branch := nibble(s.keys[i], depth)
		j := i + 1
		for j < hi && nibble(s.keys[j], depth) == branch {
			j++
		}
		var err error
		if j-i == 1 {
			children[branch], err = s.leaf(i)
		} else {
			children[branch], err = s.inner(i, j, depth+1)
		}
		if err != nil {
			return Hash{}, err
		}
		i = j
	}
	return s.seal(appendInner(s.buf[:0], &children))
}

// leaf builds the leaf of the i-th key, drawing its data, and returns its
// hash.
func (s *streamer) leaf(i int) (Hash, error) {
	b := append(s.buf[:0], prefixLeaf[:]...)
	b = s.appendData(b)
	return s.seal(append(b, s.keys[i][:]...))
}

// seal names the node node, hands it to emit and keeps its buffer for the
// next one.
func (s *streamer) seal(node []byte) (Hash, error) {
	s.buf = node
	h := HashOf(node)
	s.nodes++
	s.size += int64(len(node))
	if err := s.emit(h, node); err != nil {
		return Hash{}, fmt.Errorf("%w %s: %w", errEmit, h.Hex(), err)
	}
	return h, nil
}

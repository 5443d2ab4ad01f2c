package fetch

import (
	"runtime"
	"slices"
	"testing"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

func h(b byte) ledger.Hash { return ledger.Hash{b} }

func TestFrontierTakesRetriesFirstAndAvoidsFailers(t *testing.T) {
	defer func(w int) { wideEnough = w }(wideEnough)
	wideEnough = 1 // always depth first
	f := newFrontier()
	for b := byte(1); b <= 5; b++ {
		if !f.discover(h(b)) {
			t.Fatalf("hash %d not new", b)
		}
	}
	got := f.take(nil, 2, "a", false)
	if !slices.Equal(got, []ledger.Hash{h(4), h(5)}) {
		t.Fatalf("took %v, want the last two discovered, in discovery order", got)
	}
	f.putBack(got, "a")
	if f.waitingCount() != 5 || len(f.asked) != 0 {
		t.Fatalf("waiting %d, asked %d after putting back", f.waitingCount(), len(f.asked))
	}
	// a failed 4 and 5: it gets fresh hashes; b gets the retries first.
	if got := f.take(nil, 2, "a", false); !slices.Equal(got, []ledger.Hash{h(2), h(3)}) {
		t.Fatalf("a took %v, want fresh 2 and 3", got)
	}
	if got := f.take(nil, 3, "b", false); !slices.Equal(got, []ledger.Hash{h(4), h(5), h(1)}) {
		t.Fatalf("b took %v, want retries 4, 5 then fresh 1", got)
	}
	f.putBack([]ledger.Hash{h(4)}, "b")
	// 4 has failed at a and b: neither gets it, unless anyPeer.
	for _, p := range []string{"a", "b"} {
		if got := f.take(nil, 3, pid(p), false); len(got) != 0 {
			t.Fatalf("%s took %v though it failed them", p, got)
		}
	}
	if got := f.take(nil, 3, "a", true); !slices.Equal(got, []ledger.Hash{h(4)}) {
		t.Fatalf("anyPeer took %v", got)
	}
	for b := byte(1); b <= 5; b++ {
		if !f.verify(h(b)) {
			t.Fatalf("hash %d was not asked", b)
		}
	}
	if f.verify(h(1)) {
		t.Fatal("verified twice")
	}
	if !f.complete() || len(f.asked) != 0 || len(f.failedAt) != 0 || f.pendingCount() != 0 || f.known() != 5 {
		t.Fatalf("complete %v, asked %d, failedAt %v, pending %d, known %d", f.complete(), len(f.asked), f.failedAt, f.pendingCount(), f.known())
	}
}

// TestFrontierStaysNarrowDepthFirst: fetching a complete tree of fan-out 16
// and depth 4 (65,536 leaves), answering one batch at a time, the hashes
// pending never exceed wideEnough plus the depth times the fan-out times a
// batch (each hash of a batch taken may bring its fan-out), where breadth
// first they would reach the whole leaf level.
func TestFrontierStaysNarrowDepthFirst(t *testing.T) {
	const fanout, depth, batch, wide = 16, 4, 64, 256
	defer func(w int) { wideEnough = w }(wideEnough)
	wideEnough = wide
	type node struct{ level, index int }
	hashOf := func(n node) ledger.Hash {
		return ledger.Hash{byte(n.level), byte(n.index >> 16), byte(n.index >> 8), byte(n.index)}
	}
	byHash := map[ledger.Hash]node{}
	f := newFrontier()
	root := node{0, 0}
	byHash[hashOf(root)] = root
	f.discover(hashOf(root))
	most, leaves := 0, 0
	for f.waitingCount() > 0 {
		for _, h := range f.take(nil, batch, "a", false) {
			if !f.verify(h) {
				t.Fatalf("%v not asked", h)
			}
			n := byHash[h]
			delete(byHash, h)
			if n.level == depth {
				leaves++
				continue
			}
			for i := range fanout {
				c := node{n.level + 1, n.index*fanout + i}
				byHash[hashOf(c)] = c
				f.discover(hashOf(c))
			}
		}
		most = max(most, f.pendingCount())
	}
	if leaves != 65536 || !f.complete() {
		t.Fatalf("%d leaves, complete %v", leaves, f.complete())
	}
	if limit := wide + depth*fanout*batch; most > limit {
		t.Fatalf("up to %d hashes pending, want at most %d", most, limit)
	}
}

// TestFrontierWidensThenDeepens: while fewer than wideEnough fresh hashes
// wait, take hands out the oldest first; from wideEnough on, the newest.
func TestFrontierWidensThenDeepens(t *testing.T) {
	defer func(w int) { wideEnough = w }(wideEnough)
	wideEnough = 4
	f := newFrontier()
	for b := byte(1); b <= 5; b++ {
		f.discover(h(b))
	}
	for _, want := range [][]ledger.Hash{{h(4), h(5)}, {h(1), h(2)}, {h(3)}} {
		if got := f.take(nil, 2, "a", false); !slices.Equal(got, want) {
			t.Fatalf("took %v, want %v", got, want)
		}
	}
}

func TestFrontierForgetsOldestFailer(t *testing.T) {
	f := newFrontier()
	f.discover(h(1))
	for i := range maxFailedAt + 1 {
		got := f.take(nil, 1, pid(string(rune('a'+i))), true)
		f.putBack(got, pid(string(rune('a'+i))))
	}
	if f.failedBy(h(1), "a") || !f.failedBy(h(1), "b") || len(f.failedAt[h(1)]) != maxFailedAt {
		t.Fatalf("failedAt %v", f.failedAt[h(1)])
	}
}

// TestFrontierWidensAfterEveryPeerFailed: once every remembered peer has
// failed a hash, only the anyPeer pass hands it out, to one peer (the
// fastest offered). When that peer fails it again, every other peer may be
// asked for it again, not the same one over and over.
func TestFrontierWidensAfterEveryPeerFailed(t *testing.T) {
	f := newFrontier()
	f.discover(h(1))
	peers := make([]peer.ID, maxFailedAt)
	for i := range peers {
		peers[i] = pid(string(rune('a' + i)))
		f.putBack(f.take(nil, 1, peers[i], false), peers[i])
	}
	for _, p := range peers {
		if got := f.take(nil, 1, p, false); len(got) != 0 {
			t.Fatalf("%s took %v though every peer failed it", p, got)
		}
	}
	fastest := peers[0]
	if got := f.take(nil, 1, fastest, true); !slices.Equal(got, []ledger.Hash{h(1)}) {
		t.Fatalf("anyPeer took %v", got)
	}
	f.putBack([]ledger.Hash{h(1)}, fastest)
	if got := f.take(nil, 1, fastest, false); len(got) != 0 {
		t.Fatalf("%s, which failed it again, took %v", fastest, got)
	}
	for _, p := range peers[1:] {
		got := f.take(nil, 1, p, false)
		if !slices.Equal(got, []ledger.Hash{h(1)}) {
			t.Fatalf("%s took %v: the hash is not asked around again", p, got)
		}
		f.putBack(got, p)
	}
}

func TestFrontierPutBackIgnoresUnasked(t *testing.T) {
	f := newFrontier()
	f.discover(h(1))
	f.putBack([]ledger.Hash{h(1), h(2)}, "a")
	if f.waitingCount() != 1 || len(f.retry) != 0 {
		t.Fatalf("waiting %d, retry %v", f.waitingCount(), f.retry)
	}
}

func pid(s string) peer.ID { return peer.ID(s) }

// TestFrontierAsksAHashOnce: a hash discovered twice while it waits (never,
// in a tree) is asked once, and one discovered while asked is not added.
func TestFrontierAsksAHashOnce(t *testing.T) {
	f := newFrontier()
	for _, b := range []byte{1, 2, 1} {
		if !f.discover(h(b)) {
			t.Fatalf("hash %d, waiting, was not added", b)
		}
	}
	if got := f.take(nil, 8, "a", false); !slices.Equal(got, []ledger.Hash{h(1), h(2)}) {
		t.Fatalf("took %v, want 1 and 2 once each", got)
	}
	if f.discover(h(2)) || f.pendingCount() != 2 || f.known() != 2 {
		t.Fatalf("hash 2, asked, discovered again: pending %d, known %d", f.pendingCount(), f.known())
	}
	if !f.verify(h(1)) || !f.verify(h(2)) || !f.complete() {
		t.Fatalf("verified both: complete %v, pending %d", f.complete(), f.pendingCount())
	}
}

// TestFrontierWaitingCostsItsHash: a waiting hash costs the fetch its 32
// bytes in the queue (up to a quarter more, as the queue grows), not an
// entry in a map besides, which cost as much again and more, and which Go
// keeps at its largest for the rest of the fetch.
func TestFrontierWaitingCostsItsHash(t *testing.T) {
	const n = 100_000
	before := liveHeap()
	f := newFrontier()
	for i := range n {
		f.discover(ledger.Hash{byte(i), byte(i >> 8), byte(i >> 16)})
	}
	held := liveHeap() - before
	if per := float64(held) / n; per > 48 || f.waitingCount() != n {
		t.Errorf("%d hashes waiting hold %.0f bytes a hash, want at most 48", f.waitingCount(), per)
	}
	runtime.KeepAlive(f)
}

// liveHeap collects garbage and returns the bytes of the heap's objects.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestFrontierTakesSized: takeSized takes what take would, into a slice no
// larger than what waited, so a request for a few hashes does not carry a
// whole batch's memory.
func TestFrontierTakesSized(t *testing.T) {
	sized, plain := newFrontier(), newFrontier()
	for _, f := range []*frontier{sized, plain} {
		for b := byte(1); b <= 5; b++ {
			f.discover(h(b))
		}
		f.putBack(f.take(nil, 2, "a", false), "a") // two retries, failed by a
	}
	for _, c := range []struct {
		max     int
		to      peer.ID
		anyPeer bool
		cap     int
	}{
		{64, "a", false, 5}, // a skips its retries: three fresh, in a slice of the five waiting
		{64, "a", true, 2},  // the two retries, in a slice of the two waiting
		{64, "b", false, 0}, // nothing waits: no slice
	} {
		got, want := sized.takeSized(c.max, c.to, c.anyPeer), plain.take(nil, c.max, c.to, c.anyPeer)
		if !slices.Equal(got, want) || cap(got) != c.cap {
			t.Errorf("takeSized(%d, %s, %v) = %v (cap %d); want %v (cap %d)", c.max, c.to, c.anyPeer, got, cap(got), want, c.cap)
		}
	}
	for b := byte(10); b < 20; b++ {
		sized.discover(h(b))
	}
	if got := sized.takeSized(4, "b", false); len(got) != 4 || cap(got) != 4 {
		t.Errorf("took %d hashes in a slice of %d; want 4 in 4 (max) with 10 waiting", len(got), cap(got))
	}
}

package fetch

import (
	"slices"
	"testing"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/peer"
)

func h(b byte) ledger.Hash { return ledger.Hash{b} }

func TestFrontierTakesRetriesFirstAndAvoidsFailers(t *testing.T) {
	f := newFrontier()
	for b := byte(1); b <= 5; b++ {
		if !f.discover(h(b)) {
			t.Fatalf("hash %d not new", b)
		}
	}
	if f.discover(h(1)) {
		t.Fatal("a known hash was discovered again")
	}
	got := f.take(nil, 2, "a", false)
	if !slices.Equal(got, []ledger.Hash{h(1), h(2)}) {
		t.Fatalf("took %v, want the first two in discovery order", got)
	}
	f.putBack(got, "a")
	if f.waitingCount() != 5 || f.asked != 0 {
		t.Fatalf("waiting %d, asked %d after putting back", f.waitingCount(), f.asked)
	}
	// a failed 1 and 2: it gets fresh hashes; b gets the retries first.
	if got := f.take(nil, 2, "a", false); !slices.Equal(got, []ledger.Hash{h(3), h(4)}) {
		t.Fatalf("a took %v, want fresh 3 and 4", got)
	}
	if got := f.take(nil, 3, "b", false); !slices.Equal(got, []ledger.Hash{h(1), h(2), h(5)}) {
		t.Fatalf("b took %v, want retries 1, 2 then fresh 5", got)
	}
	f.putBack([]ledger.Hash{h(1)}, "b")
	// 1 has failed at a and b: neither gets it, unless anyPeer.
	for _, p := range []string{"a", "b"} {
		if got := f.take(nil, 3, pid(p), false); len(got) != 0 {
			t.Fatalf("%s took %v though it failed them", p, got)
		}
	}
	if got := f.take(nil, 3, "a", true); !slices.Equal(got, []ledger.Hash{h(1)}) {
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
	if !f.complete() || f.asked != 0 || len(f.failedAt) != 0 {
		t.Fatalf("complete %v, asked %d, failedAt %v", f.complete(), f.asked, f.failedAt)
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

func TestFrontierPutBackIgnoresUnasked(t *testing.T) {
	f := newFrontier()
	f.discover(h(1))
	f.putBack([]ledger.Hash{h(1), h(2)}, "a")
	if f.waitingCount() != 1 || len(f.retry) != 0 {
		t.Fatalf("waiting %d, retry %v", f.waitingCount(), f.retry)
	}
}

func pid(s string) peer.ID { return peer.ID(s) }

package slab

import (
	"math"
	"testing"
	"time"
	"unsafe"
)

// record is a value a caller might keep per slot.
type record struct {
	name     string
	lastSeen int
}

func TestSlabHoldsSlotsApartFromTheirDeadlines(t *testing.T) {
	var s Slab[record]
	a, ra := s.Alloc()
	ra.name = "a"
	b, rb := s.Alloc()
	rb.name = "b"
	if s.Used() != 2 || s.Len() != 0 {
		t.Fatalf("Used, Len = %d, %d; want 2 held, 0 armed", s.Used(), s.Len())
	}
	if _, _, ok := s.PopDue(math.MaxInt64); ok {
		t.Fatal("an unarmed slot fired")
	}
	if !s.Arm(a, 100, 10) || !s.Arm(b, 100, 5) {
		t.Fatal("Arm of a held slot failed")
	}
	if d, ok := s.Next(); !ok || d != 105 {
		t.Fatalf("Next = %d, %v; want 105", d, ok)
	}
	h, v, ok := s.PopDue(105)
	if !ok || h != b || v.name != "b" {
		t.Fatalf("PopDue(105) = %#x %v %v; want b", uint64(h), v, ok)
	}
	// Firing disarms and keeps the slot held, its value and its arming time
	// readable, until the caller frees it.
	if got := s.Get(b); got == nil || got.name != "b" {
		t.Fatalf("Get(b) after it fired = %v; want its record", got)
	}
	if at, ok := s.ArmedAt(b); !ok || at != 100 {
		t.Fatalf("ArmedAt(b) = %d, %v; want 100", at, ok)
	}
	if s.Disarm(b) {
		t.Fatal("Disarm of a slot that already fired succeeded")
	}
	// Re-arming replaces the deadline.
	if !s.Arm(a, 100, 50) {
		t.Fatal("re-Arm failed")
	}
	if d, _ := s.Next(); d != 150 || s.Len() != 1 {
		t.Fatalf("after re-Arm: Next %d, Len %d; want 150, 1", d, s.Len())
	}
	if !s.Disarm(a) || s.Len() != 0 {
		t.Fatalf("Disarm(a) left Len %d", s.Len())
	}
	checkSlab(t, &s)

	// Free keeps the value for the slot's next holder, and makes the old
	// handle stale everywhere.
	rb.lastSeen = 7
	if at, ok := s.Free(b); !ok || at != 100 {
		t.Fatalf("Free(b) = %d, %v; want when it was armed, 100", at, ok)
	}
	if _, ok := s.Free(b); ok {
		t.Fatal("Free succeeded twice")
	}
	if s.Get(b) != nil || s.Arm(b, 0, 1) || s.Disarm(b) {
		t.Fatal("a freed handle still works")
	}
	if _, ok := s.ArmedAt(b); ok {
		t.Fatal("ArmedAt answered for a freed handle")
	}
	v, gen, held := s.Slot(b)
	if v == nil || v.lastSeen != 7 || gen != uint32(b>>32) || held {
		t.Fatalf("Slot(b) = %v, gen %d, held %v; want the old record, its generation, free", v, gen, held)
	}
	c, rc := s.Alloc()
	if uint32(c) != uint32(b) || c == b {
		t.Fatalf("Alloc = %#x; want slot of %#x reused with a new generation", uint64(c), uint64(b))
	}
	if rc.lastSeen != 7 {
		t.Fatalf("the new holder sees lastSeen %d; want what the last holder left, 7", rc.lastSeen)
	}
	checkSlab(t, &s)
}

func TestSlabFreeingAnArmedSlotDisarmsIt(t *testing.T) {
	var s Slab[int]
	a, _ := s.Alloc()
	b, _ := s.Alloc()
	s.Arm(a, 0, 10)
	s.Arm(b, 0, 10)
	s.Free(a)
	if s.Len() != 1 {
		t.Fatalf("Len = %d; want 1", s.Len())
	}
	if h, _, ok := s.PopDue(10); !ok || h != b {
		t.Fatalf("PopDue = %#x, %v; want b", uint64(h), ok)
	}
	checkSlab(t, &s)
}

func TestSlabAllVisitsHeldSlotsInSlotOrder(t *testing.T) {
	var s Slab[int]
	var hs []Handle
	for i := range 5 {
		h, v := s.Alloc()
		*v = i
		hs = append(hs, h)
	}
	s.Free(hs[1])
	s.Free(hs[3])
	var got []int
	for h, v := range s.All() {
		if s.Get(h) != v {
			t.Fatalf("All yielded %#x with a value Get does not return", uint64(h))
		}
		got = append(got, *v)
		s.Free(h) // freeing during the walk is allowed
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("All yielded %v; want [0 2 4]", got)
	}
	if s.Used() != 0 {
		t.Fatalf("Used = %d after freeing all", s.Used())
	}
	checkSlab(t, &s)
}

func TestSlabGrowsInWholePages(t *testing.T) {
	var s Slab[int]
	n := 3*pageSize + 5
	first, v := s.Alloc()
	*v = -1
	for i := 1; i < n; i++ {
		h, v := s.Alloc()
		*v = i
		s.Arm(h, time.Duration(i), 10)
	}
	if len(s.pages) != 4 {
		t.Fatalf("%d pages for %d slots; want 4", len(s.pages), n)
	}
	if *s.Get(first) != -1 {
		t.Fatal("the first slot's value was lost in growing")
	}
	for i := 1; i < n; i++ {
		h, v, ok := s.PopDue(math.MaxInt64)
		if !ok || *v != i {
			t.Fatalf("pop %d: %v, %v", i, v, ok)
		}
		s.Free(h)
	}
	checkSlab(t, &s)
}

// TestFirstPageGrowsWithTheSlab: a slab of a few slots holds a first page
// of a few slots, which doubles as slots are handed out, up to a whole
// page, after which whole pages follow. Every value, generation and
// deadline survives the moves, and the bytes held stay within twice the
// slots' own (and firstPage) while the slab is smaller than a page.
func TestFirstPageGrowsWithTheSlab(t *testing.T) {
	var s Slab[uint64]
	var handles []Handle
	unarmed := 0 // holders given a freed slot by Alloc, with no deadline
	slotBytes := int(unsafe.Sizeof(node[uint64]{}))
	for n := 1; n <= 3*pageSize+5; n++ {
		h, v := s.AllocArmed(time.Duration(n), time.Duration(1000*(n%3+1))) // three lanes
		*v = uint64(n)
		handles = append(handles, h)
		if n%7 == 0 {
			// A freed slot is reused: slots grow only with the holders.
			h := handles[len(handles)-2]
			if _, ok := s.Free(h); !ok {
				t.Fatalf("Free of slot %d failed", h.Slot())
			}
			h2, v2 := s.Alloc()
			if h2.Slot() != h.Slot() {
				t.Fatalf("slot %d freed, slot %d handed out", h.Slot(), h2.Slot())
			}
			*v2 = uint64(n - 1)
			handles[len(handles)-2] = h2
			unarmed++
		}
		checkPages(t, &s)
		if n < pageSize {
			if held := len(s.pages[0]) * slotBytes; held > max(2*n, firstPage)*slotBytes {
				t.Fatalf("%d slots hold %d bytes", n, held)
			}
		}
		switch n {
		case 1, firstPage, firstPage + 1, pageSize - 1, pageSize, pageSize + 1, 3 * pageSize:
			// Every holder is still found, with its value, after each move.
			for k, h := range handles {
				v := s.Get(h)
				if v == nil || *v != uint64(k+1) {
					t.Fatalf("after %d slots, holder %d (slot %d) reads %v", n, k+1, h.Slot(), v)
				}
			}
			checkSlab(t, &s)
		}
	}
	if got := pageSizes(&s); len(got) != 4 || got[0] != pageSize || got[3] != pageSize {
		t.Fatalf("pages %v; want four of %d", got, pageSize)
	}
	// The deadlines were kept through the moves: they fire in order.
	var last time.Duration
	fired := 0
	for {
		_, v, ok := s.PopDue(1 << 40)
		if !ok {
			break
		}
		n := time.Duration(*v)
		if at := n + 1000*(n%3+1); at < last {
			t.Fatalf("holder %d fired at %d, after one at %d", n, at, last)
		} else {
			last = at
		}
		fired++
	}
	if fired != len(handles)-unarmed {
		t.Fatalf("%d of %d deadlines fired", fired, len(handles)-unarmed)
	}
}

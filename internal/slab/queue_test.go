package slab

import (
	"math"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// step is one operation of a table test with its expected result. Handles
// are referred to by the index of the Add that issued them, so cases read
// without knowing the encoding.
type step struct {
	kind  byte // 'a' add, 'r' remove by add index, 'h' remove raw handle, 'p' pop, 'n' next/len
	now   time.Duration
	after time.Duration
	v     uint64
	ref   int
	h     Handle
	ok    bool
	n     int
}

func add(now, after time.Duration, v uint64) step {
	return step{kind: 'a', now: now, after: after, v: v}
}
func rm(ref int, v uint64, ok bool) step { return step{kind: 'r', ref: ref, v: v, ok: ok} }
func rmRaw(h Handle) step                { return step{kind: 'h', h: h} }
func pop(now time.Duration, v uint64, ok bool) step {
	return step{kind: 'p', now: now, v: v, ok: ok}
}

// idle expects PopDue(now) to find nothing due.
func idle(now time.Duration) step { return step{kind: 'p', now: now} }

// next asserts Next and Len; deadline is ignored when ok is false.
func next(deadline time.Duration, ok bool, n int) step {
	return step{kind: 'n', now: deadline, ok: ok, n: n}
}

// drain pops everything at the largest time and expects vs in order.
func drain(vs ...uint64) []step {
	var s []step
	for _, v := range vs {
		s = append(s, pop(math.MaxInt64, v, true))
	}
	return append(s, idle(math.MaxInt64), next(0, false, 0))
}

func cat(parts ...[]step) []step {
	var s []step
	for _, p := range parts {
		s = append(s, p...)
	}
	return s
}

const maxDur = time.Duration(math.MaxInt64)

func TestQueueOrdering(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"empty", []step{next(0, false, 0), idle(0), idle(maxDur), rmRaw(0), next(0, false, 0)}},
		{"equal deadlines within a lane fire in add order", cat([]step{
			add(0, 10, 1), add(0, 10, 2), add(0, 10, 3), next(10, true, 3),
		}, drain(1, 2, 3))},
		{"equal deadlines across lanes fire in add order", cat([]step{
			add(0, 15, 1), add(5, 10, 2), add(10, 5, 3), add(13, 2, 4), add(14, 1, 5),
			next(15, true, 5), idle(14),
			pop(15, 1, true), pop(15, 2, true), pop(15, 3, true), pop(15, 4, true), pop(15, 5, true),
		}, drain()),
		},
		{"equal deadlines across lanes, clock going back: earlier armed first", cat([]step{
			add(5, 10, 1), add(10, 5, 2), add(0, 15, 3), add(14, 1, 4), add(13, 2, 5),
			next(15, true, 5), idle(14),
		}, drain(3, 1, 2, 5, 4)),
		},
		{"equal deadlines across lanes, later add in earlier lane", cat([]step{
			add(0, 20, 1), add(10, 10, 2), add(10, 10, 3), add(0, 20, 4),
		}, drain(1, 4, 2, 3))},
		{"interleaved durations", []step{
			add(0, 30, 1), add(0, 10, 2), add(5, 20, 3), add(6, 10, 4), add(7, 30, 5),
			next(10, true, 5), idle(9), pop(10, 2, true), idle(10),
			next(16, true, 4), pop(100, 4, true), pop(100, 3, true), pop(100, 1, true),
			pop(100, 5, true), idle(100), next(0, false, 0),
		}},
		{"pop only what is due", []step{
			add(0, 10, 1), add(0, 20, 2), add(0, 30, 3),
			pop(25, 1, true), pop(25, 2, true), idle(25), next(30, true, 1),
			idle(29), pop(30, 3, true), next(0, false, 0),
		}},
		{"remove head", cat([]step{
			add(0, 10, 1), add(1, 10, 2), add(2, 10, 3),
			rm(0, 1, true), next(11, true, 2),
		}, drain(2, 3))},
		{"remove middle", cat([]step{
			add(0, 10, 1), add(1, 10, 2), add(2, 10, 3),
			rm(1, 2, true), next(10, true, 2),
		}, drain(1, 3))},
		{"remove tail then append", cat([]step{
			add(0, 10, 1), add(1, 10, 2), add(2, 10, 3),
			rm(2, 3, true), add(3, 10, 4), next(10, true, 3),
		}, drain(1, 2, 4))},
		{"remove only element", []step{
			add(0, 10, 1), rm(0, 1, true), next(0, false, 0), idle(maxDur),
			add(5, 10, 2), next(15, true, 1), pop(15, 2, true), next(0, false, 0),
		}},
		{"remove global head hands over to another lane", []step{
			add(0, 10, 1), add(0, 20, 2), add(1, 10, 3),
			rm(0, 1, true), next(11, true, 2),
			rm(2, 3, true), next(20, true, 1),
			rm(1, 2, true), next(0, false, 0),
		}},
		{"remove middle lane of three keeps heap order", cat([]step{
			add(0, 30, 1), add(0, 20, 2), add(0, 10, 3), add(0, 40, 4), add(0, 25, 5),
			rm(1, 2, true), rm(2, 3, true), next(25, true, 3),
		}, drain(5, 1, 4))},
		{"double remove", []step{
			add(0, 10, 1), add(0, 10, 2),
			rm(0, 1, true), rm(0, 0, false), next(10, true, 1),
			pop(10, 2, true), rm(1, 0, false), next(0, false, 0),
		}},
		{"remove after fire", []step{
			add(0, 10, 1), pop(10, 1, true), rm(0, 0, false), next(0, false, 0),
		}},
		{"stale handle after slot reuse", []step{
			add(0, 10, 1), rm(0, 1, true),
			add(0, 10, 2), // reuses slot 0 with a new generation
			rm(0, 0, false), next(10, true, 1), rm(1, 2, true), next(0, false, 0),
		}},
		{"never issued handles", []step{
			add(0, 10, 1),
			rmRaw(0),                      // zero handle
			rmRaw(2),                      // slot beyond the slab
			rmRaw(2<<32 | 1),              // right slot, future generation
			rmRaw(math.MaxUint32<<32 | 1), // right slot, far generation
			rmRaw(math.MaxUint64),         // all bits set
			next(10, true, 1),
		}},
		{"issued handle of a freed slot at its current generation is rejected", []step{
			add(0, 10, 1), pop(10, 1, true),
			rmRaw(1<<32 | 1), // the popped one
			rmRaw(2<<32 | 1), // what the next Add into slot 0 will return
			next(0, false, 0),
		}},
		{"backwards now inserts in the middle and at the head", cat([]step{
			add(100, 10, 1), // 110
			add(50, 10, 2),  // 60: new head
			add(105, 10, 3), // 115
			add(100, 10, 4), // 110: after 1, before 3
			add(20, 40, 5),  // 60: other lane, before 2, armed earlier
			add(10, 10, 6),  // 20: new global head
			next(20, true, 6),
		}, drain(6, 5, 2, 1, 4, 3))},
		{"backwards now lifts a lower lane to the top of the heap", cat([]step{
			add(40, 10, 1), // 50, lane 10
			add(0, 40, 2),  // 40, lane 40 is on top
			add(20, 10, 3), // 30: new head of lane 10, which must move up
			next(30, true, 3),
		}, drain(3, 2, 1))},
		{"backwards now then remove the walked-in node", cat([]step{
			add(100, 10, 1), add(50, 10, 2), add(105, 10, 3), add(100, 10, 4),
			rm(3, 4, true), rm(1, 2, true), next(110, true, 2),
		}, drain(1, 3))},
		{"non-positive after is 1ns and shares the 1ns lane", cat([]step{
			add(5, 0, 1), add(5, -3, 2), add(5, 1, 3), add(5, math.MinInt64, 4),
			idle(5), next(6, true, 4),
		}, drain(1, 2, 3, 4))},
		{"deadline saturates instead of wrapping", cat([]step{
			add(maxDur-5, 10, 1), add(maxDur-1, 100, 2), add(0, maxDur, 3),
			add(0, maxDur-1, 4), // maxDur-1 exactly: not saturated, fires first
			add(1, maxDur, 5),
			idle(maxDur - 2), next(maxDur-1, true, 5),
		}, drain(4, 3, 5, 1, 2))}, // saturated: in the order they were armed at
		{"saturated at one instant: the shorter duration first", cat([]step{
			add(10, maxDur, 1), add(10, maxDur-2, 2), add(10, maxDur-1, 3), add(10, maxDur-2, 4),
		}, drain(2, 4, 3, 1))},
		{"negative times", cat([]step{
			add(-100, 10, 1), add(-100, 5, 2), idle(-96), pop(-95, 2, true),
			next(-90, true, 1),
		}, drain(1))},
		{"popped lane can be recreated", cat([]step{
			add(0, 10, 1), add(0, 20, 2), pop(10, 1, true), add(10, 10, 3), add(10, 5, 4),
		}, drain(4, 2, 3))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q Queue
			var hs []Handle
			for i, s := range tc.steps {
				switch s.kind {
				case 'a':
					h := q.Add(s.now, s.after, s.v)
					if h == 0 {
						t.Fatalf("step %d: Add returned the zero handle", i)
					}
					hs = append(hs, h)
				case 'r':
					v, ok := q.Remove(hs[s.ref])
					if v != s.v || ok != s.ok {
						t.Fatalf("step %d: Remove(add #%d) = %d, %v; want %d, %v", i, s.ref, v, ok, s.v, s.ok)
					}
				case 'h':
					n := q.Len()
					if v, ok := q.Remove(s.h); ok || v != 0 {
						t.Fatalf("step %d: Remove(%#x) = %d, %v; want 0, false", i, uint64(s.h), v, ok)
					}
					if q.Len() != n {
						t.Fatalf("step %d: failed Remove changed Len %d -> %d", i, n, q.Len())
					}
				case 'p':
					n := q.Len()
					v, ok := q.PopDue(s.now)
					if v != s.v || ok != s.ok {
						t.Fatalf("step %d: PopDue(%d) = %d, %v; want %d, %v", i, s.now, v, ok, s.v, s.ok)
					}
					if !ok && q.Len() != n {
						t.Fatalf("step %d: failed PopDue changed Len %d -> %d", i, n, q.Len())
					}
				case 'n':
					d, ok := q.Next()
					if ok != s.ok || (ok && d != s.now) {
						t.Fatalf("step %d: Next() = %d, %v; want %d, %v", i, d, ok, s.now, s.ok)
					}
					if q.Len() != s.n {
						t.Fatalf("step %d: Len() = %d; want %d", i, q.Len(), s.n)
					}
				}
				checkInvariants(t, &q)
			}
		})
	}
}

func TestNodeHeaderSize(t *testing.T) {
	// The slab is the working set at a million pending entries; a field
	// added carelessly would cost every one of them.
	if got := unsafe.Offsetof(node[uint64]{}.value); got != 24 {
		t.Fatalf("a node's value starts at byte %d; want 24", got)
	}
}

func TestHandlesAreUniqueAndNonZero(t *testing.T) {
	var q Queue
	seen := make(map[Handle]bool)
	for round := 0; round < 50; round++ {
		var hs []Handle
		for i := 0; i < 20; i++ {
			h := q.Add(0, time.Duration(1+i%3), 0)
			if h == 0 || seen[h] {
				t.Fatalf("round %d: Add returned %#x, zero or already issued", round, uint64(h))
			}
			seen[h] = true
			hs = append(hs, h)
		}
		for _, h := range hs {
			if _, ok := q.Remove(h); !ok {
				t.Fatalf("Remove(%#x) failed", uint64(h))
			}
		}
	}
	if q.s.slots != 20 {
		t.Fatalf("slab grew to %d slots; want 20, freed slots should be reused", q.s.slots)
	}
	// Every handle ever issued is now stale.
	for h := range seen {
		if _, ok := q.Remove(h); ok {
			t.Fatalf("stale handle %#x removed something", uint64(h))
		}
	}
}

func TestGenerationExhaustionRetiresSlot(t *testing.T) {
	var q Queue
	q.Remove(q.Add(0, 10, 1))
	// Fast-forward slot 0 to its last generation instead of cycling it
	// 2^32 times.
	q.s.node(0).gen = math.MaxUint32 - 1
	last := q.Add(0, 10, 2)
	if last != math.MaxUint32<<32|1 {
		t.Fatalf("Add = %#x; want the slot 0 handle at the last generation", uint64(last))
	}
	if v, ok := q.Remove(last); !ok || v != 2 {
		t.Fatalf("Remove(last) = %d, %v", v, ok)
	}
	checkInvariants(t, &q)
	// Slot 0 must never come back: reusing it would wrap to generation 0
	// and revive handles issued 2^32 generations ago.
	h := q.Add(0, 10, 3)
	if uint32(h) == 1 {
		t.Fatalf("retired slot 0 reused: %#x", uint64(h))
	}
	for _, stale := range []Handle{last, 1, 1<<32 | 1} {
		if _, ok := q.Remove(stale); ok {
			t.Fatalf("Remove(%#x) on a retired slot succeeded", uint64(stale))
		}
	}
	checkInvariants(t, &q)
	if v, ok := q.PopDue(10); !ok || v != 3 {
		t.Fatalf("PopDue = %d, %v; want 3, true", v, ok)
	}
}

func TestManyDistinctDurations(t *testing.T) {
	// One lane per entry: the heap over lanes carries all the ordering.
	var q Queue
	const n = 500
	for i := n; i > 0; i-- {
		q.Add(0, time.Duration(i), uint64(i))
	}
	checkInvariants(t, &q)
	if len(q.s.heap) != n {
		t.Fatalf("%d lanes in the heap; want %d", len(q.s.heap), n)
	}
	for i := 1; i <= n; i++ {
		if v, ok := q.PopDue(time.Duration(i)); !ok || v != uint64(i) {
			t.Fatalf("PopDue(%d) = %d, %v", i, v, ok)
		}
		if i%50 == 0 {
			checkInvariants(t, &q)
		}
	}
	if len(q.s.heap) != 0 || len(q.s.byAfter) != 0 {
		t.Fatalf("empty queue still has %d heap lanes, %d mapped", len(q.s.heap), len(q.s.byAfter))
	}
	// Lane records are recycled, not grown.
	q.Add(0, 7, 7)
	if len(q.s.lanes) != n {
		t.Fatalf("lanes grew to %d; want %d recycled records", len(q.s.lanes), n)
	}
}

func TestZeroAllocsSteadyState(t *testing.T) {
	afters := []time.Duration{10, 20, 30}
	t.Run("add+pop", func(t *testing.T) {
		var q Queue
		var now time.Duration
		for i := 0; i < 1000; i++ {
			q.Add(now, afters[i%3], 0)
			now++
		}
		i := 0
		allocs := testing.AllocsPerRun(10000, func() {
			d, _ := q.Next()
			now = max(now, d)
			if _, ok := q.PopDue(now); !ok {
				panic("nothing due")
			}
			q.Add(now, afters[i%3], 0)
			i++
		})
		if allocs != 0 {
			t.Fatalf("Add+PopDue allocates %v times per op; want 0", allocs)
		}
	})
	t.Run("add+remove", func(t *testing.T) {
		var q Queue
		hs := make([]Handle, 1000)
		for i := range hs {
			hs[i] = q.Add(time.Duration(i), afters[i%3], 0)
		}
		i := 0
		allocs := testing.AllocsPerRun(10000, func() {
			j := (i * 7919) % len(hs)
			if _, ok := q.Remove(hs[j]); !ok {
				panic("remove failed")
			}
			hs[j] = q.Add(time.Duration(1000+i), afters[i%3], 0)
			i++
		})
		if allocs != 0 {
			t.Fatalf("Add+Remove allocates %v times per op; want 0", allocs)
		}
	})
	t.Run("lane churn", func(t *testing.T) {
		// The queue empties every op, so each Add creates a lane and each
		// PopDue deletes it: the map and lane records must be recycled.
		var q Queue
		q.Add(0, 10, 0) // warm up: the map and one lane record exist
		q.PopDue(10)
		var now time.Duration
		i := 0
		allocs := testing.AllocsPerRun(10000, func() {
			q.Add(now, afters[i%3], 0)
			now += 30
			i++
			if _, ok := q.PopDue(now); !ok {
				panic("nothing due")
			}
		})
		if allocs != 0 {
			t.Fatalf("lane create+delete allocates %v times per op; want 0", allocs)
		}
	})
}

// checkInvariants verifies every invariant of q's slab.
func checkInvariants(t testing.TB, q *Queue) {
	t.Helper()
	checkSlab(t, &q.s)
}

// checkSlab verifies every invariant documented in the package comment.
func checkSlab[V any](t testing.TB, s *Slab[V]) {
	t.Helper()
	live := 0
	for k, l := range s.heap {
		ln := &s.lanes[l]
		if int(ln.pos) != k {
			t.Fatalf("lane %d at heap[%d] records pos %d", l, k, ln.pos)
		}
		if k > 0 && s.less(l, s.heap[(k-1)/2]) {
			t.Fatalf("heap order broken at %d", k)
		}
		if got, ok := s.byAfter[ln.after]; !ok || got != l {
			t.Fatalf("byAfter[%d] = %d, %v; want lane %d", ln.after, got, ok, l)
		}
		if ln.head == none {
			t.Fatalf("empty lane %d in the heap", l)
		}
		if s.node(ln.head).prev != none {
			t.Fatalf("lane %d head has a prev", l)
		}
		prev := int32(none)
		for i := ln.head; i != none; i = s.node(i).next {
			nd := s.node(i)
			if nd.lane != l || nd.prev != prev {
				t.Fatalf("node %d: lane %d prev %d; want lane %d prev %d", i, nd.lane, nd.prev, l, prev)
			}
			if prev != none && nd.at < s.node(prev).at {
				t.Fatalf("lane %d not sorted at node %d", l, i)
			}
			prev = i
			live++
			if live > int(s.slots) {
				t.Fatalf("cycle in lane %d", l)
			}
		}
		if ln.tail != prev {
			t.Fatalf("lane %d tail %d; want %d", l, ln.tail, prev)
		}
	}
	if len(s.byAfter) != len(s.heap) {
		t.Fatalf("byAfter has %d lanes, heap %d", len(s.byAfter), len(s.heap))
	}
	if live != s.armed || s.Len() != s.armed {
		t.Fatalf("%d nodes reachable, armed = %d", live, s.armed)
	}
	free := 0
	for i := s.freeSlot(); i != none; i = s.node(i).next {
		if s.node(i).lane != freed {
			t.Fatalf("free slot %d is marked held", i)
		}
		free++
		if free > int(s.slots) {
			t.Fatal("cycle in free list")
		}
	}
	armed, held := 0, 0
	for i := int32(0); i < s.slots; i++ {
		switch nd := s.node(i); {
		case nd.lane >= 0:
			armed++
			held++
		case nd.lane == unarmed:
			held++
		}
	}
	if armed != live {
		t.Fatalf("%d nodes marked armed, %d reachable", armed, live)
	}
	if held != s.used || s.Used() != s.used {
		t.Fatalf("%d nodes marked held, used = %d", held, s.used)
	}
	if held+free > int(s.slots) {
		t.Fatalf("%d held + %d free > %d slots", held, free, s.slots)
	}
	for _, l := range s.freeLanes {
		if s.lanes[l].head != none {
			t.Fatalf("free lane %d has a head", l)
		}
	}
	if len(s.freeLanes)+len(s.heap) != len(s.lanes) {
		t.Fatalf("%d free + %d live lanes != %d records", len(s.freeLanes), len(s.heap), len(s.lanes))
	}
	checkPages(t, s)
}

// checkPages verifies the page layout: a first page of firstPage slots
// doubled just enough to hold every slot, up to pageSize, and then whole
// pages of pageSize, just enough of them.
func checkPages[V any](t testing.TB, s *Slab[V]) {
	t.Helper()
	slots := int(s.slots)
	if slots == 0 {
		if len(s.pages) != 0 {
			t.Fatalf("%d pages before any slot", len(s.pages))
		}
		return
	}
	if slots <= pageSize {
		want := firstPage
		for want < slots {
			want *= 2
		}
		if len(s.pages) != 1 || len(s.pages[0]) != want {
			t.Fatalf("%d slots in pages of %v; want one of %d", slots, pageSizes(s), want)
		}
		return
	}
	if want := (slots + pageSize - 1) / pageSize; len(s.pages) != want {
		t.Fatalf("%d slots in %d pages; want %d", slots, len(s.pages), want)
	}
	for p, page := range s.pages {
		if len(page) != pageSize {
			t.Fatalf("%d slots: page %d holds %d; want %d", slots, p, len(page), pageSize)
		}
	}
}

func pageSizes[V any](s *Slab[V]) []int {
	var sizes []int
	for _, page := range s.pages {
		sizes = append(sizes, len(page))
	}
	return sizes
}

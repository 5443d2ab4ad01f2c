package slab

import (
	"container/heap"
	"fmt"
	"testing"
	"time"
)

// heapQueue is the baseline Queue is measured against: the textbook
// container/heap of pointers, indexed so that it can remove, with items
// recycled so that it too is allocation-free in steady state. It skips
// stale-handle detection, which only flatters it.
type heapQueue struct {
	items heapItems
	free  []*heapItem
	seq   uint64
}

type heapItem struct {
	deadline time.Duration
	seq      uint64
	value    uint64
	index    int // position in items; -1 once removed
}

type heapItems []*heapItem

func (h heapItems) Len() int { return len(h) }
func (h heapItems) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].seq < h[j].seq
}
func (h heapItems) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *heapItems) Push(x any) {
	it := x.(*heapItem)
	it.index = len(*h)
	*h = append(*h, it)
}
func (h *heapItems) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	it.index = -1
	return it
}

func (q *heapQueue) Add(now, after time.Duration, value uint64) *heapItem {
	var it *heapItem
	if k := len(q.free); k > 0 {
		it = q.free[k-1]
		q.free = q.free[:k-1]
	} else {
		it = new(heapItem)
	}
	q.seq++
	*it = heapItem{deadline: now + after, seq: q.seq, value: value}
	heap.Push(&q.items, it)
	return it
}

func (q *heapQueue) Remove(it *heapItem) (uint64, bool) {
	if it.index < 0 {
		return 0, false
	}
	heap.Remove(&q.items, it.index)
	q.free = append(q.free, it)
	return it.value, true
}

func (q *heapQueue) PopDue(now time.Duration) (uint64, bool) {
	if len(q.items) == 0 || q.items[0].deadline > now {
		return 0, false
	}
	it := heap.Pop(&q.items).(*heapItem)
	q.free = append(q.free, it)
	return it.value, true
}

func (q *heapQueue) Next() (time.Duration, bool) {
	if len(q.items) == 0 {
		return 0, false
	}
	return q.items[0].deadline, true
}

// benchAfters are the few timeouts a node typically uses at once.
var benchAfters = [3]time.Duration{5 * time.Second, 10 * time.Second, 30 * time.Second}

var benchSizes = []int{100, 10_000, 1_000_000}

// Setup arms the pending entries 1µs apart, so even a million of them span
// less than the shortest timeout: by the time anything fires, now has
// passed every Add, as on a real clock. (Arming them further apart would
// make the loop add at a now earlier than setup's, which is a clock set
// backwards and measures the lanes' walk-back instead of the normal case.)

// BenchmarkQueue measures the steady state of a busy node: the earliest
// deadline fires and a new request is armed, keeping pending constant.
func BenchmarkQueue(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("impl=lanes/pending=%d", n), func(b *testing.B) {
			var q Queue
			var now time.Duration
			for i := range n {
				q.Add(now, benchAfters[i%3], uint64(i))
				now += time.Microsecond
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				now, _ = q.Next()
				if _, ok := q.PopDue(now); !ok {
					b.Fatal("nothing due")
				}
				q.Add(now, benchAfters[i%3], uint64(i))
				i++
			}
		})
		b.Run(fmt.Sprintf("impl=heap/pending=%d", n), func(b *testing.B) {
			var q heapQueue
			var now time.Duration
			for i := range n {
				q.Add(now, benchAfters[i%3], uint64(i))
				now += time.Microsecond
			}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				now, _ = q.Next()
				if _, ok := q.PopDue(now); !ok {
					b.Fatal("nothing due")
				}
				q.Add(now, benchAfters[i%3], uint64(i))
				i++
			}
		})
	}
}

// xorshift is a cheap deterministic generator, so that picking a victim
// costs little next to the operation measured.
type xorshift uint64

func (x *xorshift) intn(n int) int {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return int(uint64(*x) % uint64(n))
}

// BenchmarkQueueRemove measures cancelling a random pending request (a
// response arrived) and arming a new one.
func BenchmarkQueueRemove(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("impl=lanes/pending=%d", n), func(b *testing.B) {
			var q Queue
			var now time.Duration
			hs := make([]Handle, n)
			for i := range hs {
				hs[i] = q.Add(now, benchAfters[i%3], uint64(i))
				now += time.Microsecond
			}
			r := xorshift(0x9e3779b97f4a7c15)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				j := r.intn(n)
				if _, ok := q.Remove(hs[j]); !ok {
					b.Fatal("remove failed")
				}
				hs[j] = q.Add(now, benchAfters[i%3], uint64(i))
				now += time.Microsecond
				i++
			}
		})
		b.Run(fmt.Sprintf("impl=heap/pending=%d", n), func(b *testing.B) {
			var q heapQueue
			var now time.Duration
			hs := make([]*heapItem, n)
			for i := range hs {
				hs[i] = q.Add(now, benchAfters[i%3], uint64(i))
				now += time.Microsecond
			}
			r := xorshift(0x9e3779b97f4a7c15)
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				j := r.intn(n)
				if _, ok := q.Remove(hs[j]); !ok {
					b.Fatal("remove failed")
				}
				hs[j] = q.Add(now, benchAfters[i%3], uint64(i))
				now += time.Microsecond
				i++
			}
		})
	}
}

// TestHeapBaselineOrder keeps the baseline honest: a benchmark against a
// wrong baseline would prove nothing. Only live entries are removed, since
// the baseline cannot tell a recycled item from a stale one.
func TestHeapBaselineOrder(t *testing.T) {
	var q Queue
	var h heapQueue
	r := xorshift(42)
	var now time.Duration
	type pending struct {
		v  uint64
		qh Handle
		hh *heapItem
	}
	var live []pending
	forget := func(j int) {
		live[j] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	for i := range 3000 {
		switch r.intn(3) {
		case 0:
			after := benchAfters[r.intn(3)] / time.Second
			v := uint64(i)
			live = append(live, pending{v, q.Add(now, after, v), h.Add(now, after, v)})
		case 1:
			if len(live) > 0 {
				j := r.intn(len(live))
				v1, ok1 := q.Remove(live[j].qh)
				v2, ok2 := h.Remove(live[j].hh)
				if v1 != live[j].v || v2 != live[j].v || !ok1 || !ok2 {
					t.Fatalf("op %d: Remove = %d, %v (lanes), %d, %v (heap); want %d", i, v1, ok1, v2, ok2, live[j].v)
				}
				forget(j)
			}
		default:
			now += time.Duration(r.intn(4))
			v1, ok1 := q.PopDue(now)
			v2, ok2 := h.PopDue(now)
			if v1 != v2 || ok1 != ok2 {
				t.Fatalf("op %d: PopDue = %d, %v (lanes) vs %d, %v (heap)", i, v1, ok1, v2, ok2)
			}
			for j := range live {
				if ok1 && live[j].v == v1 {
					forget(j)
					break
				}
			}
		}
	}
	if q.Len() != len(live) || h.items.Len() != len(live) {
		t.Fatalf("Len = %d (lanes), %d (heap); want %d", q.Len(), h.items.Len(), len(live))
	}
}

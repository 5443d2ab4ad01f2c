package slab

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// model is the obviously-correct reference: one slice kept sorted by
// (deadline, time armed, after, seq), searched linearly.
type model struct {
	es  []modelEntry
	seq uint64
}

type modelEntry struct {
	deadline time.Duration
	at       time.Duration
	after    time.Duration
	seq      uint64
	v        uint64
	h        Handle
}

func (m *model) add(now, after time.Duration, v uint64, h Handle) {
	if after < 1 {
		after = 1
	}
	// Stated differently from Queue.Add on purpose: detect the wrap after
	// the fact rather than preventing it.
	d := now + after
	if d < now {
		d = maxDur
	}
	m.seq++
	e := modelEntry{deadline: d, at: now, after: after, seq: m.seq, v: v, h: h}
	i, _ := slices.BinarySearchFunc(m.es, e, func(a, b modelEntry) int {
		return cmp.Or(cmp.Compare(a.deadline, b.deadline), cmp.Compare(a.at, b.at),
			cmp.Compare(a.after, b.after), cmp.Compare(a.seq, b.seq))
	})
	m.es = slices.Insert(m.es, i, e)
}

func (m *model) remove(h Handle) (uint64, bool) {
	for i, e := range m.es {
		if e.h == h {
			m.es = slices.Delete(m.es, i, i+1)
			return e.v, true
		}
	}
	return 0, false
}

func (m *model) popDue(now time.Duration) (uint64, bool) {
	if len(m.es) == 0 || m.es[0].deadline > now {
		return 0, false
	}
	e := m.es[0]
	m.es = m.es[1:]
	return e.v, true
}

func (m *model) next() (time.Duration, bool) {
	if len(m.es) == 0 {
		return 0, false
	}
	return m.es[0].deadline, true
}

// afterChoices mixes the common case (a few repeated durations) with the
// edges: non-positive, huge enough to saturate, and one-off values.
var afterChoices = []time.Duration{
	10, 10, 10, 10, 25, 25, 1, 2, 5, 1000,
	0, -7, maxDur, maxDur / 2, maxDur - 3,
}

// chooser returns a number in [0, n), or false when the input is spent.
type chooser func(n int) (int, bool)

// runDifferential applies the operations choose dictates to a Queue and
// the model and fails on the first disagreement in any result, Len or Next,
// or on any broken invariant.
func runDifferential(t testing.TB, choose chooser) {
	t.Helper()
	var q Queue
	var m model
	var issued []Handle
	var now time.Duration
	// The first choice sets how add-heavy the run is, so both small and
	// large queues get explored.
	bias, ok := choose(40)
	if !ok {
		return
	}
	for op := uint64(1); ; op++ {
		c, ok := choose(100)
		if !ok {
			return
		}
		if c < 30+bias {
			c = -1 // add
		} else if c, ok = choose(100); !ok {
			return
		}
		var what string
		switch {
		case c < 0:
			k, _ := choose(len(afterChoices))
			after := afterChoices[k]
			if k, _ := choose(8); k == 0 {
				// A one-off duration makes a lane that soon empties.
				r, _ := choose(200)
				after = time.Duration(r - 20)
			}
			step, _ := choose(3)
			now += time.Duration(step)
			h := q.Add(now, after, op)
			if h == 0 {
				t.Fatalf("op %d: Add returned the zero handle", op)
			}
			m.add(now, after, op, h)
			issued = append(issued, h)
			what = "add"
		case c < 35 && len(m.es) > 0:
			j, _ := choose(len(m.es))
			h := m.es[j].h
			v, ok := q.Remove(h)
			wv, wok := m.remove(h)
			if v != wv || ok != wok {
				t.Fatalf("op %d: Remove(live %#x) = %d, %v; want %d, %v", op, uint64(h), v, ok, wv, wok)
			}
			what = "remove live"
		case c < 45 && len(issued) > 0:
			j, _ := choose(len(issued))
			h := issued[j]
			v, ok := q.Remove(h)
			wv, wok := m.remove(h)
			if v != wv || ok != wok {
				t.Fatalf("op %d: Remove(issued %#x) = %d, %v; want %d, %v", op, uint64(h), v, ok, wv, wok)
			}
			what = "remove issued"
		case c < 50:
			g, _ := choose(4)
			s, _ := choose(int(q.s.slots) + 2)
			h := Handle(uint64(g)<<32 | uint64(s))
			v, ok := q.Remove(h)
			wv, wok := m.remove(h)
			if v != wv || ok != wok {
				t.Fatalf("op %d: Remove(arbitrary %#x) = %d, %v; want %d, %v", op, uint64(h), v, ok, wv, wok)
			}
			what = "remove arbitrary"
		case c < 95:
			step, _ := choose(30)
			now += time.Duration(step)
			v, ok := q.PopDue(now)
			wv, wok := m.popDue(now)
			if v != wv || ok != wok {
				t.Fatalf("op %d: PopDue(%d) = %d, %v; want %d, %v", op, now, v, ok, wv, wok)
			}
			what = "pop"
		default:
			// The clock was set backwards.
			back, _ := choose(60)
			now -= time.Duration(back)
			what = "clock back"
		}
		if q.Len() != len(m.es) {
			t.Fatalf("op %d (%s): Len = %d; want %d", op, what, q.Len(), len(m.es))
		}
		d, ok := q.Next()
		wd, wok := m.next()
		if d != wd || ok != wok {
			t.Fatalf("op %d (%s): Next = %d, %v; want %d, %v", op, what, d, ok, wd, wok)
		}
		checkInvariants(t, &q)
	}
}

func TestQueueMatchesModel(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 0x7ee75c4ed))
		budget := 5000
		runDifferential(t, func(n int) (int, bool) {
			if budget == 0 {
				return 0, false
			}
			budget--
			return r.IntN(n), true
		})
	}
}

// byteChooser turns fuzz input into choices, one byte at a time (two for
// ranges above a byte), and ends the run when the input is spent.
func byteChooser(data []byte) chooser {
	return func(n int) (int, bool) {
		if len(data) == 0 {
			return 0, false
		}
		x := int(data[0])
		data = data[1:]
		if n > 256 && len(data) > 0 {
			x = x<<8 | int(data[0])
			data = data[1:]
		}
		return x % n, true
	}
}

func FuzzQueue(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{39, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 90, 29})
	// Equal deadlines across lanes, a backwards clock, then drain.
	f.Add([]byte{30, 0, 0, 7, 2, 0, 4, 7, 1, 99, 59, 0, 0, 7, 0, 94, 29, 94, 29, 94, 29})
	// Saturated deadlines and removes of live and arbitrary handles.
	f.Add([]byte{35, 1, 12, 7, 0, 1, 13, 7, 0, 60, 0, 70, 1, 3, 80, 1, 2, 94, 29})
	seed := make([]byte, 512)
	r := rand.New(rand.NewPCG(99, 99))
	for i := range seed {
		seed[i] = byte(r.Uint32())
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		runDifferential(t, byteChooser(data))
	})
}

//go:build lockorder

package lockorder

import (
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// Enabled reports whether this is a checked build (build tag "lockorder").
// It is true here: every Lock, Unlock and AssertHeld is checked.
const Enabled = true

// Mutex is a mutual exclusion lock with a name and a [Rank]. Its zero value
// is an unlocked mutex, but Init must be called before first use. A Mutex
// must not be copied after first use.
//
// In this checked build a Mutex is owned by the goroutine that locked it:
// only that goroutine may unlock it, and the rank order is enforced per
// goroutine (see the package documentation).
type Mutex struct {
	mu       sync.Mutex
	name     string // empty until Init; doubles as the "initialised" flag
	rank     Rank
	acquired atomic.Uint64 // times locked; see Acquisitions
}

// Init records the lock's name and rank. It must be called once, before any
// other method, and before m is shared with other goroutines.
//
// In this checked build Init panics with a [*UsageError] if name is empty
// (the name is what makes panic messages useful, and the empty name marks an
// uninitialised Mutex) or if m has already been initialised.
func (m *Mutex) Init(name string, rank Rank) {
	if m.name != "" {
		panic(&UsageError{Op: "Init", Name: m.name, Rank: m.rank, Problem: "Init called twice"})
	}
	if name == "" {
		panic(&UsageError{Op: "Init", Problem: "name must not be empty"})
	}
	m.name = name
	m.rank = rank
}

// Lock locks m, blocking until it is available.
//
// In this checked build, before blocking, Lock panics with an [*OrderError]
// if the calling goroutine holds any lock whose rank is greater than or equal
// to m's (including m itself), and with a [*UsageError] if Init was not
// called. When it panics, m is not locked and nothing is recorded.
func (m *Mutex) Lock() {
	m.checkInit("Lock")
	gid := goid()

	// Check first and panic before blocking: a re-entrant Lock must report
	// the bug rather than deadlock, and a misordered one must report it even
	// if this run would not happen to deadlock.
	reg.mu.Lock()
	err := orderViolation(reg.held[gid], m)
	reg.mu.Unlock()
	if err != nil {
		panic(err)
	}

	m.mu.Lock()
	m.acquired.Add(1)

	// Record m only once it is actually held. Only this goroutine changes
	// reg.held[gid], so nothing can have changed it while we blocked; the
	// registry lock is needed only because the map itself is shared.
	reg.mu.Lock()
	held, ok := reg.held[gid]
	if !ok {
		held = reg.spareSlice()
	}
	reg.held[gid] = append(held, m)
	reg.mu.Unlock()
}

// Unlock unlocks m.
//
// In this checked build Unlock panics with a [*UsageError], leaving m as it
// was and the bookkeeping unchanged, if the calling goroutine does not hold m
// (even if another goroutine does) or if Init was not called. Locks may be
// released in any order.
func (m *Mutex) Unlock() {
	m.checkInit("Unlock")
	gid := goid()

	reg.mu.Lock()
	held := reg.held[gid]
	i := indexOf(held, m)
	if i < 0 {
		reg.mu.Unlock()
		panic(&UsageError{Op: "Unlock", Name: m.name, Rank: m.rank, Problem: "not held by the calling goroutine"})
	}
	if len(held) == 1 {
		// Drop the entry so the map does not grow with every goroutine that
		// ever held a lock (goroutine ids are not reused), and keep its
		// slice for the next goroutine that takes a first lock.
		delete(reg.held, gid)
		held[0] = nil
		reg.spare = append(reg.spare, held[:0])
	} else {
		// Shift rather than swap so the slice stays in acquisition order,
		// which is also increasing rank order.
		copy(held[i:], held[i+1:])
		held[len(held)-1] = nil // do not retain the Mutex
		reg.held[gid] = held[:len(held)-1]
	}
	reg.mu.Unlock()

	// Unregister before unlocking: once m.mu is released another goroutine
	// may lock m, and by then m must no longer be recorded as ours.
	m.mu.Unlock()
}

// AssertHeld documents and checks that the caller holds m. In this checked
// build it panics with a [*UsageError] unless the calling goroutine holds m
// (a lock held by a different goroutine does not count), or if Init was not
// called.
func (m *Mutex) AssertHeld() {
	m.checkInit("AssertHeld")
	gid := goid()

	reg.mu.Lock()
	ok := indexOf(reg.held[gid], m) >= 0
	reg.mu.Unlock()
	if !ok {
		panic(&UsageError{Op: "AssertHeld", Name: m.name, Rank: m.rank, Problem: "not held by the calling goroutine"})
	}
}

// Acquisitions returns how many times m has been locked. It exists only in
// checked builds, for tests that pin how many round trips of a lock a path
// takes: a count read before and after the path, with no other goroutine
// locking m meanwhile, is the path's. It may be called from any goroutine,
// holding m or not.
func (m *Mutex) Acquisitions() uint64 { return m.acquired.Load() }

func (m *Mutex) checkInit(op string) {
	if m.name == "" {
		panic(&UsageError{Op: op, Problem: "Init was not called"})
	}
}

// reg records, for every goroutine that currently holds at least one Mutex,
// the Mutexes it holds in acquisition order. Because acquisitions are in
// strictly increasing rank and removal preserves order, each slice is sorted
// by increasing rank and its last element is the highest-ranked lock held.
//
// A goroutine that exits while holding a Mutex leaves its entry behind; that
// is a bug in the caller, and the entry is harmless apart from its memory.
var reg = registry{held: make(map[uint64][]*Mutex)}

type registry struct {
	mu   sync.Mutex // a plain mutex: the registry is outside the rank order
	held map[uint64][]*Mutex
	// spare holds the empty slices of goroutines that released their last
	// lock, so that taking a first lock does not allocate: a checked build
	// runs the whole test suite, and every Lock used to cost allocations.
	spare [][]*Mutex
}

// spareSlice returns an empty slice to record a goroutine's locks in.
// Caller holds r.mu.
func (r *registry) spareSlice() []*Mutex {
	n := len(r.spare)
	if n == 0 {
		return make([]*Mutex, 0, 4)
	}
	held := r.spare[n-1]
	r.spare[n-1] = nil
	r.spare = r.spare[:n-1]
	return held
}

// orderViolation returns the error Lock should panic with if a goroutine
// holding held (in acquisition order) acquires m, or nil if that is allowed.
func orderViolation(held []*Mutex, m *Mutex) *OrderError {
	if len(held) == 0 {
		return nil
	}
	// held is sorted by rank, so its last element decides whether m is too
	// low. Only if it is do we look for m itself, to report re-entry in
	// preference to a rank clash (a held m always has rank >= m.rank).
	top := held[len(held)-1]
	if top.rank < m.rank {
		return nil
	}
	if indexOf(held, m) >= 0 {
		return &OrderError{Acquiring: m.name, AcquiringRank: m.rank, Held: m.name, HeldRank: m.rank, Reentrant: true}
	}
	return &OrderError{Acquiring: m.name, AcquiringRank: m.rank, Held: top.name, HeldRank: top.rank}
}

// indexOf returns the index of m in held, or -1. It searches from the end
// because locks are usually released in reverse order of acquisition.
func indexOf(held []*Mutex, m *Mutex) int {
	for i := len(held) - 1; i >= 0; i-- {
		if held[i] == m {
			return i
		}
	}
	return -1
}

// goid returns the id of the calling goroutine, parsed from the first line
// of its stack trace, which has the form "goroutine N [status]:". Only the
// decimal digits after "goroutine " are read, so extra fields the runtime
// prints after the id in some modes (" gp=... m=...") do not matter. If the
// format ever changes, goid panics rather than guess.
func goid() uint64 {
	// 64 bytes holds "goroutine " plus the 20 digits of the largest uint64;
	// runtime.Stack truncates the rest of the trace, which we do not need.
	// The buffer comes from a pool: one on the stack escapes to the heap
	// through runtime.Stack, an allocation on every call.
	buf := stackBuffers.Get().(*[64]byte)
	defer stackBuffers.Put(buf)
	out := buf[:runtime.Stack(buf[:], false)]

	const prefix = "goroutine "
	if len(out) < len(prefix) || string(out[:len(prefix)]) != prefix {
		badStackHeader(out)
	}
	b := out[len(prefix):]
	var id uint64
	n := 0
	for ; n < len(b) && '0' <= b[n] && b[n] <= '9'; n++ {
		id = id*10 + uint64(b[n]-'0')
	}
	// The runtime's goroutine ids are uint64, so a well-formed id cannot
	// overflow id.
	if n == 0 || n == len(b) || b[n] != ' ' {
		badStackHeader(out)
	}
	return id
}

var stackBuffers = sync.Pool{New: func() any { return new([64]byte) }}

// badStackHeader panics because the runtime.Stack output was not in the
// documented form; the checker cannot work without goroutine identities.
func badStackHeader(b []byte) {
	panic("lockorder: cannot parse goroutine id from runtime.Stack output " + strconv.Quote(string(b)))
}

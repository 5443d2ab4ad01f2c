package limit

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// The example, small enough to fill: total 4; ledger at most 3 of
// them; fetch-a at most 2 of ledger's; fetch-b no limit of its own; tx at
// most 2. solo is a second root. fetch-b is declared before its parent.
var exampleClasses = []Class{
	{Name: "total", Limit: 4},
	{Name: "fetch-b", Limit: Unlimited, Parent: "ledger"},
	{Name: "ledger", Limit: 3, Parent: "total"},
	{Name: "fetch-a", Limit: 2, Parent: "ledger"},
	{Name: "tx", Limit: 2, Parent: "total"},
	{Name: "solo", Limit: 1},
}

func newClasses(t *testing.T, decls []Class) *Classes {
	t.Helper()
	c, err := NewClasses(decls)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func id(t *testing.T, c *Classes, name string) ClassID {
	t.Helper()
	i, err := c.ID(name)
	if err != nil {
		t.Fatal(err)
	}
	return i
}

func TestNewClassesErrors(t *testing.T) {
	for name, c := range map[string]struct {
		decls []Class
		want  error
	}{
		"no name":        {[]Class{{Name: "", Limit: 1}}, ErrBadClass},
		"limit 0":        {[]Class{{Name: "a", Limit: 0}}, ErrBadClass},
		"negative limit": {[]Class{{Name: "a", Limit: -3}}, ErrBadClass},
		"duplicate":      {[]Class{{Name: "a", Limit: 1}, {Name: "b", Limit: 1}, {Name: "a", Limit: 2}}, ErrDuplicateClass},
		"unknown parent": {[]Class{{Name: "a", Limit: 1, Parent: "b"}}, ErrUnknownClass},
		"own parent":     {[]Class{{Name: "a", Limit: 1, Parent: "a"}}, ErrClassCycle},
		"two-cycle":      {[]Class{{Name: "a", Limit: 1, Parent: "b"}, {Name: "b", Limit: 1, Parent: "a"}}, ErrClassCycle},
		"cycle behind a tail": {[]Class{
			{Name: "root", Limit: 1},
			{Name: "tail", Limit: 1, Parent: "x"},
			{Name: "x", Limit: 1, Parent: "y"},
			{Name: "y", Limit: 1, Parent: "z"},
			{Name: "z", Limit: 1, Parent: "x"},
		}, ErrClassCycle},
	} {
		if _, err := NewClasses(c.decls); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	c := newClasses(t, nil)
	if c.Len() != 0 {
		t.Errorf("no declarations: %d classes", c.Len())
	}
	long := []Class{{Name: "c0", Limit: 1}}
	for i := 1; i < 1000; i++ {
		long = append(long, Class{Name: "c" + itoa(i), Limit: 1, Parent: "c" + itoa(i-1)})
	}
	if c := newClasses(t, long); c.Len() != 1000 {
		t.Errorf("a chain of 1000: %d classes", c.Len())
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

func TestClassesBookAndRelease(t *testing.T) {
	c := newClasses(t, exampleClasses)
	names := []string{"total", "ledger", "fetch-a", "fetch-b", "tx", "solo"}
	for i, d := range exampleClasses {
		if got := id(t, c, d.Name); got != ClassID(i) || c.Name(got) != d.Name {
			t.Fatalf("%q has id %d, name %q", d.Name, got, c.Name(got))
		}
	}
	for i, s := range []struct {
		release bool
		class   string
		ok      bool
		err     error
		want    [6]int // in flight, in the order of names
	}{
		{class: "fetch-a", ok: true, want: [6]int{1, 1, 1, 0, 0, 0}},
		{class: "fetch-a", ok: true, want: [6]int{2, 2, 2, 0, 0, 0}},
		{class: "fetch-a", ok: false, want: [6]int{2, 2, 2, 0, 0, 0}}, // fetch-a full
		{class: "fetch-b", ok: true, want: [6]int{3, 3, 2, 1, 0, 0}},  // no limit of its own
		{class: "fetch-b", ok: false, want: [6]int{3, 3, 2, 1, 0, 0}}, // ledger full
		{class: "ledger", ok: false, want: [6]int{3, 3, 2, 1, 0, 0}},  // a parent can be booked directly too
		{class: "tx", ok: true, want: [6]int{4, 3, 2, 1, 1, 0}},       //
		{class: "tx", ok: false, want: [6]int{4, 3, 2, 1, 1, 0}},      // total full, though tx is not
		{class: "solo", ok: true, want: [6]int{4, 3, 2, 1, 1, 1}},     // another tree
		{release: true, class: "fetch-a", want: [6]int{3, 2, 1, 1, 1, 1}},
		{class: "ledger", ok: true, want: [6]int{4, 3, 1, 1, 1, 1}},
		{release: true, class: "ledger", want: [6]int{3, 2, 1, 1, 1, 1}},
		{release: true, class: "ledger", err: ErrNotBooked, want: [6]int{3, 2, 1, 1, 1, 1}}, // the rest are its children's to release
		{release: true, class: "total", err: ErrNotBooked, want: [6]int{3, 2, 1, 1, 1, 1}},
		{release: true, class: "fetch-a", want: [6]int{2, 1, 0, 1, 1, 1}},
		{release: true, class: "solo", want: [6]int{2, 1, 0, 1, 1, 0}},
		{release: true, class: "solo", err: ErrNotBooked, want: [6]int{2, 1, 0, 1, 1, 0}},
		{release: true, class: "fetch-b", want: [6]int{1, 0, 0, 0, 1, 0}},
		{release: true, class: "fetch-b", err: ErrNotBooked, want: [6]int{1, 0, 0, 0, 1, 0}},
	} {
		var ok bool
		var err error
		if s.release {
			err = c.Release(id(t, c, s.class))
		} else {
			ok, err = c.Book(id(t, c, s.class))
		}
		if ok != s.ok || !errors.Is(err, s.err) {
			t.Fatalf("step %d (%s): %v, %v; want %v, %v", i, s.class, ok, err, s.ok, s.err)
		}
		for j, n := range names {
			if got, _ := c.InFlight(id(t, c, n)); got != s.want[j] {
				t.Fatalf("step %d: %s has %d in flight, want %d", i, n, got, s.want[j])
			}
		}
	}
}

func TestClassesUnknown(t *testing.T) {
	c := newClasses(t, exampleClasses)
	if _, err := c.ID("nope"); !errors.Is(err, ErrUnknownClass) {
		t.Errorf("ID: %v", err)
	}
	for _, bad := range []ClassID{-1, 6, 1 << 30} {
		if ok, err := c.Book(bad); ok || !errors.Is(err, ErrUnknownClass) {
			t.Errorf("Book(%d): %v %v", bad, ok, err)
		}
		if err := c.Release(bad); !errors.Is(err, ErrUnknownClass) {
			t.Errorf("Release(%d): %v", bad, err)
		}
		if _, err := c.InFlight(bad); !errors.Is(err, ErrUnknownClass) {
			t.Errorf("InFlight(%d): %v", bad, err)
		}
		if c.Name(bad) != "" {
			t.Errorf("Name(%d) = %q", bad, c.Name(bad))
		}
	}
	var zero Classes
	if ok, err := zero.Book(0); ok || !errors.Is(err, ErrUnknownClass) {
		t.Errorf("zero Classes: %v %v", ok, err)
	}
}

// TestClassesNeverOverLimit books and releases at random and checks, after
// every step, that each class's count is its own bookings plus its
// descendants' and within its limit, and that a booking is refused exactly
// when some class on its path is full.
func TestClassesNeverOverLimit(t *testing.T) {
	c := newClasses(t, exampleClasses)
	rng := rand.New(rand.NewPCG(3, 4))
	own := make([]int, c.Len()) // bookings made directly in each class
	for step := range 20000 {
		cl := ClassID(rng.IntN(c.Len()))
		if rng.IntN(2) == 0 {
			roomy := true
			for a := cl; a >= 0; a = c.classes[a].parent {
				roomy = roomy && c.classes[a].inFlight < c.classes[a].limit
			}
			ok, err := c.Book(cl)
			if err != nil || ok != roomy {
				t.Fatalf("step %d: Book(%s) = %v, %v with room %v", step, c.Name(cl), ok, err, roomy)
			}
			if ok {
				own[cl]++
			}
		} else {
			err := c.Release(cl)
			if (own[cl] > 0) != (err == nil) || (err != nil && !errors.Is(err, ErrNotBooked)) {
				t.Fatalf("step %d: Release(%s) with %d booked: %v", step, c.Name(cl), own[cl], err)
			}
			if err == nil {
				own[cl]--
			}
		}
		want := make([]int, c.Len())
		for i, n := range own {
			for a := ClassID(i); a >= 0; a = c.classes[a].parent {
				want[a] += n
			}
		}
		for i, cl := range c.classes {
			if cl.inFlight != want[i] || cl.booked != own[i] || cl.inFlight > cl.limit {
				t.Fatalf("step %d: %s has %d in flight, want %d, limit %d", step, cl.name, cl.inFlight, want[i], cl.limit)
			}
		}
	}
}

func TestClassesRoomAndLimit(t *testing.T) {
	c := newClasses(t, exampleClasses)
	room := func(name string) int {
		t.Helper()
		n, err := c.Room(id(t, c, name))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, tc := range []struct {
		class string
		want  int
	}{{"total", 4}, {"ledger", 3}, {"fetch-a", 2}, {"fetch-b", 3}, {"tx", 2}, {"solo", 1}} {
		if got := room(tc.class); got != tc.want {
			t.Errorf("room of %s: %d, want %d", tc.class, got, tc.want)
		}
	}
	for _, n := range []string{"fetch-a", "fetch-b", "tx"} {
		if ok, _ := c.Book(id(t, c, n)); !ok {
			t.Fatal("setup")
		}
	}
	// total holds 3 of 4, ledger 2 of 3, fetch-a 1 of 2, tx 1 of 2.
	for _, tc := range []struct {
		class string
		want  int
	}{{"total", 1}, {"ledger", 1}, {"fetch-a", 1}, {"fetch-b", 1}, {"tx", 1}, {"solo", 1}} {
		if got := room(tc.class); got != tc.want {
			t.Errorf("room of %s: %d, want %d", tc.class, got, tc.want)
		}
	}
	if ok, _ := c.Book(id(t, c, "tx")); !ok {
		t.Fatal("setup")
	}
	if got := room("fetch-b"); got != 0 {
		t.Errorf("room of fetch-b under a full total: %d", got)
	}
	if n, err := c.Limit(id(t, c, "fetch-b")); err != nil || n != Unlimited {
		t.Errorf("limit of fetch-b: %d, %v", n, err)
	}
	if n, err := c.Limit(id(t, c, "ledger")); err != nil || n != 3 {
		t.Errorf("limit of ledger: %d, %v", n, err)
	}
	if _, err := c.Room(-1); !errors.Is(err, ErrUnknownClass) {
		t.Errorf("Room(-1): %v", err)
	}
	if _, err := c.Limit(6); !errors.Is(err, ErrUnknownClass) {
		t.Errorf("Limit(6): %v", err)
	}
}

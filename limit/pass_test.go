package limit

import (
	"errors"
	"testing"
)

// passStep is one call in a pass test: Book, Release (on the Classes) or
// Reset, by class name.
type passStep struct {
	do    string // "book", "release", "reset", "full"
	class string
	want  bool // Book's or Full's result
}

func runPass(t *testing.T, c *Classes, p *Pass, steps []passStep) {
	t.Helper()
	for i, s := range steps {
		var got bool
		switch s.do {
		case "book":
			var err error
			if got, err = p.Book(id(t, c, s.class)); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		case "full":
			got = p.Full(id(t, c, s.class))
		case "release":
			if err := c.Release(id(t, c, s.class)); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			continue
		case "reset":
			p.Reset()
			continue
		}
		if got != s.want {
			t.Fatalf("step %d: %s %s = %v, want %v", i, s.do, s.class, got, s.want)
		}
	}
}

// TestPassSeedTable plays seed 003's example: a type full at a higher
// priority is not checked at lower ones in the same pass.
func TestPassSeedTable(t *testing.T) {
	c := newClasses(t, []Class{
		{Name: "send-email", Limit: 1},
		{Name: "send-kafka", Limit: 2},
		{Name: "execute-payout", Limit: 1},
	})
	if ok, _ := c.Book(id(t, c, "send-email")); !ok {
		t.Fatal("setup")
	}
	p := c.NewPass()
	runPass(t, c, p, []passStep{
		// Highest priority table: email 1, kafka 2, payout 4; email 3, kafka 5.
		{do: "book", class: "send-email", want: false}, // full: found so
		{do: "book", class: "send-kafka", want: true},
		{do: "book", class: "execute-payout", want: true},
		{do: "book", class: "send-kafka", want: true},
		// An email finishes while the pass goes on.
		{do: "release", class: "send-email"},
		// Lower priority: email stays full for this pass, unchecked; kafka
		// and payout are now full too, found so.
		{do: "full", class: "send-email", want: true},
		{do: "book", class: "send-email", want: false},
		{do: "full", class: "send-kafka", want: false},
		{do: "book", class: "send-kafka", want: false},
		{do: "full", class: "send-kafka", want: true},
		{do: "book", class: "execute-payout", want: false},
		// The next pass sees the freed slot.
		{do: "reset"},
		{do: "full", class: "send-email", want: false},
		{do: "book", class: "send-email", want: true},
	})
}

func TestPassAncestorFull(t *testing.T) {
	c := newClasses(t, exampleClasses)
	for _, n := range []string{"fetch-a", "fetch-a", "fetch-b"} {
		if ok, _ := c.Book(id(t, c, n)); !ok {
			t.Fatal("setup")
		}
	}
	p := c.NewPass()
	runPass(t, c, p, []passStep{
		{do: "full", class: "fetch-b", want: false},
		{do: "book", class: "fetch-b", want: false}, // ledger (3) is full
		{do: "full", class: "fetch-a", want: true},  // so is every ledger class, never checked
		{do: "full", class: "ledger", want: true},
		{do: "full", class: "total", want: false}, // total was not full
		{do: "book", class: "tx", want: true},
		{do: "release", class: "fetch-a"},
		{do: "book", class: "fetch-a", want: false}, // not checked again this pass
		{do: "reset"},
		{do: "book", class: "fetch-a", want: true},
		{do: "book", class: "solo", want: true},
		{do: "book", class: "solo", want: false},
		{do: "full", class: "solo", want: true},
		{do: "full", class: "total", want: false}, // total holds 4 now but nothing found it full
		{do: "book", class: "tx", want: false},
		{do: "full", class: "total", want: true},
		{do: "full", class: "fetch-b", want: true},
	})
}

func TestPassUnknown(t *testing.T) {
	c := newClasses(t, exampleClasses)
	p := c.NewPass()
	for _, bad := range []ClassID{-1, 6} {
		if ok, err := p.Book(bad); ok || !errors.Is(err, ErrUnknownClass) {
			t.Errorf("Book(%d): %v %v", bad, ok, err)
		}
		if p.Full(bad) {
			t.Errorf("Full(%d)", bad)
		}
	}
}

// TestPassAdmitsBooksNothing: Admits answers as Book would and remembers a
// full class the same way, without booking.
func TestPassAdmitsBooksNothing(t *testing.T) {
	c := newClasses(t, exampleClasses)
	for _, n := range []string{"fetch-a", "fetch-a"} {
		if ok, _ := c.Book(id(t, c, n)); !ok {
			t.Fatal("setup")
		}
	}
	p := c.NewPass()
	if ok, err := p.Admits(id(t, c, "fetch-b")); !ok || err != nil {
		t.Fatalf("fetch-b: %v %v", ok, err)
	}
	if n, _ := c.InFlight(id(t, c, "ledger")); n != 2 {
		t.Fatalf("Admits booked: ledger holds %d", n)
	}
	if ok, _ := p.Admits(id(t, c, "fetch-a")); ok {
		t.Fatal("fetch-a is full")
	}
	if err := c.Release(id(t, c, "fetch-a")); err != nil {
		t.Fatal(err)
	}
	if ok, _ := p.Admits(id(t, c, "fetch-a")); ok {
		t.Fatal("fetch-a was found full in this pass: not checked again")
	}
	p.Reset()
	if ok, _ := p.Admits(id(t, c, "fetch-a")); !ok {
		t.Fatal("a new pass sees the room")
	}
	if _, err := p.Admits(9); !errors.Is(err, ErrUnknownClass) {
		t.Fatalf("Admits(9): %v", err)
	}
}

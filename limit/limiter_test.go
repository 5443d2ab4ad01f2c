package limit

import (
	"errors"
	"testing"
)

func TestBoundsValidate(t *testing.T) {
	for _, c := range []struct {
		b  Bounds
		ok bool
	}{
		{Bounds{Min: 1, Max: 1, Start: 1}, true},
		{Bounds{Min: 1, Max: 64, Start: 4}, true},
		{Bounds{Min: 2, Max: maxInt, Start: maxInt}, true},
		{Bounds{}, false},
		{Bounds{Min: 0, Max: 4, Start: 2}, false},
		{Bounds{Min: -1, Max: 4, Start: 2}, false},
		{Bounds{Min: 4, Max: 8, Start: 2}, false},
		{Bounds{Min: 1, Max: 3, Start: 4}, false},
		{Bounds{Min: 5, Max: 4, Start: 4}, false},
	} {
		err := c.b.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrBadBounds)) {
			t.Errorf("%+v: %v, want ok=%v", c.b, err, c.ok)
		}
	}
}

func TestBoundsClamp(t *testing.T) {
	b := Bounds{Min: 2, Max: 10, Start: 4}
	for _, c := range []struct{ in, want int }{{-5, 2}, {1, 2}, {2, 2}, {7, 7}, {10, 10}, {11, 10}, {maxInt, 10}} {
		if got := b.clamp(c.in); got != c.want {
			t.Errorf("clamp(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestOutcomeString(t *testing.T) {
	for o, want := range map[Outcome]string{Answered: "answered", TimedOut: "timed-out", Failed: "failed", 9: "Outcome(9)"} {
		if got := o.String(); got != want {
			t.Errorf("%d: %q, want %q", o, got, want)
		}
	}
}

func TestFixed(t *testing.T) {
	f, err := NewFixed(4)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []Sample{{Outcome: TimedOut}, {Outcome: Answered, RTT: 1, InFlight: 4}, {Outcome: Failed}} {
		f.Observe(s)
		if f.Limit() != 4 {
			t.Fatalf("after %+v: limit %d", s, f.Limit())
		}
	}
	if got := f.Bounds(); got != (Bounds{Min: 4, Max: 4, Start: 4}) {
		t.Errorf("bounds %+v", got)
	}
	for _, n := range []int{0, -1} {
		if _, err := NewFixed(n); !errors.Is(err, ErrBadBounds) {
			t.Errorf("NewFixed(%d): %v", n, err)
		}
	}
}

package limit

import "fmt"

// Fixed is a Limiter whose limit never changes: the fixed channel count a
// host chose before limits adapted, as a Limiter. Observe does nothing.
//
// A Fixed is immutable and safe for concurrent use. The zero Fixed is not
// usable (its limit would be 0); build one with NewFixed.
type Fixed struct {
	n int
}

var _ Limiter = Fixed{}

// NewFixed returns a Fixed limit of n. It fails with an error wrapping
// ErrBadBounds if n < 1.
func NewFixed(n int) (Fixed, error) {
	if n < 1 {
		return Fixed{}, fmt.Errorf("%w: fixed limit %d below 1", ErrBadBounds, n)
	}
	return Fixed{n: n}, nil
}

// Limit returns the fixed limit.
func (f Fixed) Limit() int { return f.n }

// Observe does nothing: a fixed limit learns nothing.
func (Fixed) Observe(Sample) {}

// Bounds returns the bounds a Fixed limit keeps: the limit itself as Min,
// Max and Start.
func (f Fixed) Bounds() Bounds { return Bounds{Min: f.n, Max: f.n, Start: f.n} }

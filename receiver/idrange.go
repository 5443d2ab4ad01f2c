package receiver

import (
	"errors"
	"fmt"
)

// IDRange is the half-open range [Lo, Hi) that request IDs are drawn from,
// for hosts whose wire field for the ID is narrower than 64 bits, or that
// reserve some values for other uses: rippled's TMGetObjectByHash carries
// the ID in a uint32 seq and reserves low values, so IDRange{1 << 24, 1 << 32}
// suits it. The zero IDRange means no range: IDs use all 64 bits.
type IDRange struct {
	Lo, Hi uint64
}

// ErrBadIDRange is returned for an IDRange that is not zero and does not
// hold at least one ID, or that includes the ID zero.
var ErrBadIDRange = errors.New("peersched: bad request ID range")

// IsZero reports whether r is the zero IDRange: no range.
func (r IDRange) IsZero() bool { return r == IDRange{} }

// Size returns the number of IDs in r.
func (r IDRange) Size() uint64 { return r.Hi - r.Lo }

// Validate checks r: the zero IDRange is valid; any other must have
// 1 <= Lo < Hi (the ID zero means "not a request"). It returns an error
// wrapping ErrBadIDRange.
func (r IDRange) Validate() error {
	if r.IsZero() {
		return nil
	}
	if r.Lo == 0 || r.Hi <= r.Lo {
		return fmt.Errorf("%w: [%d, %d)", ErrBadIDRange, r.Lo, r.Hi)
	}
	return nil
}

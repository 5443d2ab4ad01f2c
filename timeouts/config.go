package timeouts

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults for the zero fields of EstimatorConfig.
const (
	// DefaultMin is the shortest hard deadline: Linux's floor for TCP's
	// RTO. RFC 6298 asks for 1s, which is meant for a path whose every
	// spurious timeout resends data; a request here costs one retry.
	DefaultMin = 200 * time.Millisecond
	// DefaultMax is the longest hard deadline: RFC 6298's suggested
	// ceiling for the RTO.
	DefaultMax = 60 * time.Second
	// DefaultInitial is the hard deadline before any response was
	// measured: RFC 6298's initial RTO.
	DefaultInitial = time.Second
	// DefaultGranularity is G, the clock's granularity in the formulas: a
	// millisecond, about what a runtime timer can resolve.
	DefaultGranularity = time.Millisecond
	// DefaultSoftDeviations is how many deviations above the smoothed
	// response time the soft deadline lies: two, about the 95th
	// percentile.
	DefaultSoftDeviations = 2
)

// MaxDeadline is the largest Max accepted (about 36 years): it keeps every
// sum and product of the estimator below math.MaxInt64 nanoseconds.
const MaxDeadline = time.Duration(math.MaxInt64 / 8)

// hardDeviations is RFC 6298's K: the hard deadline lies four deviations
// above the smoothed response time.
const hardDeviations = 4

// ErrBadConfig is returned by NewEstimator for an EstimatorConfig that
// cannot describe an Estimator.
var ErrBadConfig = errors.New("timeouts: bad estimator config")

// EstimatorConfig describes an Estimator. The zero value means every default.
type EstimatorConfig struct {
	// Min and Max bound every hard deadline. 0 means DefaultMin and
	// DefaultMax; a default Min above the Max given is lowered to it. Max
	// may be at most MaxDeadline.
	Min, Max time.Duration
	// Initial is the hard deadline before any response was measured. 0
	// means DefaultInitial, moved into [Min, Max] if it is outside; one
	// given must lie in [Min, Max].
	Initial time.Duration
	// Granularity is RFC 6298's G: the least margin a deadline keeps above
	// the smoothed response time, however steady the response times. 0
	// means DefaultGranularity; one given must be at most Max.
	Granularity time.Duration
	// SoftDeviations is how many smoothed deviations above the smoothed
	// response time the soft deadline lies, from 1 to 4 (4 makes it the
	// hard deadline without its floor Min). 0 means DefaultSoftDeviations.
	SoftDeviations int
}

// withDefaults returns c with its zero fields filled in, or an error
// wrapping ErrBadConfig.
func (c EstimatorConfig) withDefaults() (EstimatorConfig, error) {
	if c.Min < 0 || c.Max < 0 || c.Initial < 0 || c.Granularity < 0 ||
		c.SoftDeviations < 0 || c.SoftDeviations > hardDeviations || c.Max > MaxDeadline {
		return c, fmt.Errorf("%w: min %v, max %v (at most %v), initial %v, granularity %v, soft deviations %d (1 to %d)",
			ErrBadConfig, c.Min, c.Max, MaxDeadline, c.Initial, c.Granularity, c.SoftDeviations, hardDeviations)
	}
	if c.Max == 0 {
		c.Max = DefaultMax
	}
	if c.Min == 0 {
		c.Min = min(DefaultMin, c.Max)
	}
	if c.Min > c.Max {
		return c, fmt.Errorf("%w: min %v above max %v", ErrBadConfig, c.Min, c.Max)
	}
	if c.Initial == 0 {
		c.Initial = min(max(DefaultInitial, c.Min), c.Max)
	}
	if c.Initial < c.Min || c.Initial > c.Max {
		return c, fmt.Errorf("%w: initial %v outside [%v, %v]", ErrBadConfig, c.Initial, c.Min, c.Max)
	}
	if c.Granularity == 0 {
		c.Granularity = DefaultGranularity
	}
	if c.Granularity > c.Max {
		return c, fmt.Errorf("%w: granularity %v above max %v", ErrBadConfig, c.Granularity, c.Max)
	}
	if c.SoftDeviations == 0 {
		c.SoftDeviations = DefaultSoftDeviations
	}
	return c, nil
}

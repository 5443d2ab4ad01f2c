package timeouts

import "time"

// estimate is one RFC 6298 estimator (section 2): a smoothed response time
// and its smoothed mean deviation.
type estimate struct {
	srtt, rttvar time.Duration
	sampled      bool // srtt and rttvar hold a measurement
}

// observe moves the estimate by one sample in [0, Max]. The first sets
// SRTT = R and RTTVAR = R/2; each later one sets RTTVAR to 3/4 of itself
// plus 1/4 of |SRTT − R| (with the SRTT from before the sample), then SRTT
// to 7/8 of itself plus 1/8 of R. Both stay in [0, Max]: each becomes a mix
// of values in that range.
func (e *estimate) observe(rtt time.Duration) {
	if !e.sampled {
		e.srtt, e.rttvar, e.sampled = rtt, rtt/2, true
		return
	}
	dev := e.srtt - rtt
	if dev < 0 {
		dev = -dev
	}
	e.rttvar += (dev - e.rttvar) / 4
	e.srtt += (rtt - e.srtt) / 8
}

// above returns SRTT + max(g, n·RTTVAR). With SRTT and RTTVAR at most Max,
// g at most Max and n at most hardDeviations, it is at most 5·Max, which
// MaxDeadline keeps from overflowing.
func (e *estimate) above(g time.Duration, n int) time.Duration {
	return e.srtt + max(g, time.Duration(n)*e.rttvar)
}

// doubled returns d doubled n times, but at most ceiling (RFC 6298 section
// 5.5's back-off, bounded as its note allows). d and ceiling are at most
// MaxDeadline, so no doubling overflows.
func doubled(d time.Duration, n int, ceiling time.Duration) time.Duration {
	for ; n > 0 && d < ceiling; n-- {
		d = min(2*d, ceiling)
	}
	return d
}

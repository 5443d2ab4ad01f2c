package simnet

import "time"

// The timing formulas of a simulated peer, as pure functions so they can be
// checked against tables of exact durations.

// slowFactor returns the latency multiplier in force elapsed after the peer
// was added: the Factor of the last step whose At is not after elapsed, or 1
// before the first step. steps are sorted by At (Profile validation ensures
// it).
func slowFactor(steps []Slowdown, elapsed time.Duration) float64 {
	f := 1.0
	for _, s := range steps {
		if s.At > elapsed {
			break
		}
		f = s.Factor
	}
	return f
}

// scale multiplies d by f, capped at MaxLatency.
func scale(d time.Duration, f float64) time.Duration {
	x := float64(d) * f
	if x >= float64(MaxLatency) {
		return MaxLatency
	}
	return time.Duration(x)
}

// transmitTime is how long size bytes occupy a link of bandwidth bytes per
// second, rounded up to the nanosecond; zero for an unlimited link
// (bandwidth 0).
func transmitTime(size int, bandwidth int64) time.Duration {
	if bandwidth <= 0 {
		return 0
	}
	return time.Duration((int64(size)*int64(time.Second) + bandwidth - 1) / bandwidth)
}

// transmit schedules a response of size bytes, ready at ready, on a peer's
// uplink that is busy until linkFree. The link sends one response at a time,
// in the order they were scheduled (FIFO), so a response waits for the link
// to be free and then for its own transmission. It returns when the response
// arrives and when the link is free again. On an unlimited link the response
// arrives when ready and the link is never busy.
func transmit(ready, linkFree time.Time, size int, bandwidth int64) (arrive, free time.Time) {
	tx := transmitTime(size, bandwidth)
	if tx == 0 {
		return ready, linkFree
	}
	start := ready
	if linkFree.After(start) {
		start = linkFree
	}
	done := start.Add(tx)
	return done, done
}

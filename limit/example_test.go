package limit_test

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/limit"
)

// A scheduler keeps one Vegas per peer and tells it how each request ended.
// Here the peer serves 12 requests per 50ms round trip: up to 12 in flight
// it answers in 50ms, its floor, and beyond that the extra requests wait in
// its queue, so the round trip grows in proportion (Little's law).
func ExampleVegas() {
	v, err := limit.NewVegas(limit.VegasConfig{Bounds: limit.Bounds{Min: 1, Max: 64, Start: 4}})
	if err != nil {
		panic(err)
	}
	rtt := func(inFlight int) time.Duration {
		return 50 * time.Millisecond * time.Duration(max(inFlight, 12)) / 12
	}
	last := v.Limit()
	fmt.Println("start", last)
	for range 300 {
		l := v.Limit()
		v.Observe(limit.Sample{Outcome: limit.Answered, RTT: rtt(l), InFlight: l})
		if v.Limit() != last {
			last = v.Limit()
			fmt.Println("limit", last)
		}
	}
	// It doubles while the peer shows no queue, overshoots, and settles at
	// the 12 the peer serves plus a queue of Beta, 2.

	// Output:
	// start 4
	// limit 8
	// limit 16
	// limit 15
	// limit 14
}

// A host that knows its peers' capacity keeps the fixed channel count.
func ExampleFixed() {
	f, err := limit.NewFixed(16)
	if err != nil {
		panic(err)
	}
	var l limit.Limiter = f
	l.Observe(limit.Sample{Outcome: limit.TimedOut, RTT: time.Second, InFlight: 16})
	fmt.Println(l.Limit())
	// Output: 16
}

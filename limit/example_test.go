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
	// the 12 the peer serves plus as much of a queue of Beta, 1.5, as whole
	// requests allow: 13.

	// Output:
	// start 4
	// limit 8
	// limit 16
	// limit 13
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

// An application-wide budget of 100 messages per second with bursts of 10,
// and 1 MB/s of declared request bytes with bursts of 64 kB. A message goes
// when both buckets can pay for it; otherwise the scheduler keeps its sender
// waiting and arms its timer for the longer of the two waits.
func ExampleBucket() {
	messages, err := limit.NewBucket(100, 10)
	if err != nil {
		panic(err)
	}
	bytes, err := limit.NewBucket(1<<20, 64<<10)
	if err != nil {
		panic(err)
	}
	send := func(now time.Duration, size int64) time.Duration {
		wm, err := messages.Wait(now, 1)
		if err != nil {
			panic(err)
		}
		wb, err := bytes.Wait(now, size)
		if err != nil {
			panic(err) // a size above the byte burst could never be sent
		}
		if wait := max(wm, wb); wait > 0 {
			return wait
		}
		_, _ = messages.Take(now, 1) // both said 0: neither can fail now
		_, _ = bytes.Take(now, size)
		return 0
	}
	now := time.Duration(0)
	for i := range 12 {
		if wait := send(now, 4<<10); wait > 0 {
			fmt.Printf("message %d waits %v for a message token\n", i, wait)
			now += wait
			send(now, 4<<10)
		}
	}
	fmt.Println("big message waits", send(now, 60<<10), "for bytes")
	// Output:
	// message 10 waits 10ms for a message token
	// message 11 waits 10ms for a message token
	// big message waits 22.96875ms for bytes
}

// The issue's hierarchy: 64 requests in flight in all, ledger fetches at
// most 48 of them, each ledger fetch at most 8. A request books its class on
// send and releases it exactly once when it ends.
func ExampleClasses() {
	classes, err := limit.NewClasses([]limit.Class{
		{Name: "total", Limit: 64},
		{Name: "ledger", Limit: 48, Parent: "total"},
		{Name: "fetch-1", Limit: 8, Parent: "ledger"},
		{Name: "tx-relay", Limit: limit.Unlimited, Parent: "total"},
	})
	if err != nil {
		panic(err)
	}
	fetch, err := classes.ID("fetch-1")
	if err != nil {
		panic(err)
	}
	sent := 0
	for {
		ok, err := classes.Book(fetch)
		if err != nil {
			panic(err)
		}
		if !ok {
			break
		}
		sent++
	}
	ledger, _ := classes.ID("ledger")
	inLedger, _ := classes.InFlight(ledger)
	fmt.Println("fetch-1 sent", sent, "ledger holds", inLedger)

	if err := classes.Release(fetch); err != nil { // one request ended
		panic(err)
	}
	ok, _ := classes.Book(fetch)
	fmt.Println("room again:", ok)
	// Output:
	// fetch-1 sent 8 ledger holds 8
	// room again: true
}

// One pass of a scheduler over its waiting senders, highest priority first:
// a sender whose class is full is passed over without losing its place, and
// once a class is found full the rest of the pass skips its senders without
// checking.
func ExamplePass() {
	classes, err := limit.NewClasses([]limit.Class{
		{Name: "validation", Limit: 1},
		{Name: "ledger", Limit: 2},
	})
	if err != nil {
		panic(err)
	}
	id := func(name string) limit.ClassID {
		c, err := classes.ID(name)
		if err != nil {
			panic(err)
		}
		return c
	}
	waiting := []string{"ledger", "validation", "validation", "ledger", "ledger", "validation"}
	pass := classes.NewPass()
	for i, name := range waiting {
		if pass.Full(id(name)) {
			fmt.Println(i, name, "skipped")
			continue
		}
		ok, err := pass.Book(id(name))
		if err != nil {
			panic(err)
		}
		fmt.Println(i, name, map[bool]string{true: "sends", false: "found full"}[ok])
	}
	// Output:
	// 0 ledger sends
	// 1 validation sends
	// 2 validation found full
	// 3 ledger sends
	// 4 ledger found full
	// 5 validation skipped
}

package timeouts_test

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/timeouts"
)

// A sender asks for a request's deadlines when it sends, passes the hard one
// to the scheduler as the timeout, and reports how the request ended.
func ExampleEstimator() {
	e, err := timeouts.NewEstimator(timeouts.EstimatorConfig{Min: 100 * time.Millisecond, Max: 2 * time.Second})
	if err != nil {
		panic(err)
	}
	show := func(p string) {
		soft, hard := e.Deadlines("p1")
		fmt.Printf("%-28s soft %v, hard %v\n", p, soft, hard)
	}
	show("nothing measured:")
	e.Observe("p1", 40*time.Millisecond)
	show("after an answer in 40ms:")
	e.Observe("p1", 200*time.Millisecond)
	show("after one in 200ms:")
	e.Expired("p1")
	show("after a request expired:")
	soft, hard := e.Deadlines("p2")
	fmt.Printf("%-28s soft %v, hard %v\n", "p2, never heard from:", soft, hard)
	// Output:
	// nothing measured:            soft 100ms, hard 1s
	// after an answer in 40ms:     soft 80ms, hard 120ms
	// after one in 200ms:          soft 170ms, hard 280ms
	// after a request expired:     soft 170ms, hard 560ms
	// p2, never heard from:        soft 170ms, hard 280ms
}

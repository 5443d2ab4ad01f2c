package simnet_test

import (
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// One simulated peer answering one request. A real host passes the response
// to the scheduler's Deliver instead of a channel, and lets the scheduler
// call Send (see the package documentation for the glue).
func Example() {
	l, err := ledger.Generate(1, 100)
	if err != nil {
		panic(err)
	}
	responses := make(chan any, 1)
	net, err := simnet.New(simnet.Config{
		Ledger: l,
		Seed:   1,
		Deliver: func(from peer.ID, id peer.RequestID, resp any) {
			fmt.Println("response", id, "from", from)
			responses <- resp
		},
	})
	if err != nil {
		panic(err)
	}
	defer net.Close()

	p, err := net.AddPeer("p1", simnet.Profile{Latency: simnet.Fixed(time.Millisecond)})
	if err != nil {
		panic(err)
	}
	if err := p.Send(1, ledger.GetObjects{Hashes: []ledger.Hash{l.Root()}}); err != nil {
		panic(err)
	}
	resp := (<-responses).(ledger.Objects)
	fmt.Println(len(resp.Items), ledger.Verify(l.Root(), resp.Items[0].Data))
	// Output:
	// response 1 from p1
	// 1 true
}

// A peer with one worker and 10ms of service per request, a queue of two,
// and requests beyond that dropped. Queueing delays are decided when a
// request arrives, so they are known before any answer.
func ExampleService() {
	l, err := ledger.Generate(1, 100)
	if err != nil {
		panic(err)
	}
	clk := clock.NewMock() // never advanced: every request arrives at once
	net, err := simnet.New(simnet.Config{
		Ledger:  l,
		Clock:   clk,
		Deliver: func(peer.ID, peer.RequestID, any) {},
	})
	if err != nil {
		panic(err)
	}
	defer net.Close()

	p, err := net.AddPeer("small", simnet.Profile{
		Latency: simnet.Fixed(20 * time.Millisecond),
		Service: simnet.Service{
			Workers:    1,
			PerRequest: 10 * time.Millisecond,
			QueueLimit: 2,
			Overflow:   simnet.OverflowDrop,
		},
	})
	if err != nil {
		panic(err)
	}
	for id := uint64(1); id <= 5; id++ {
		if err := p.Send(peer.RequestID(id), ledger.GetObjects{Hashes: []ledger.Hash{l.Root()}}); err != nil {
			panic(err)
		}
	}
	delays := p.QueueDelays()
	st := p.Stats()
	fmt.Println("queueing delays", delays)
	fmt.Println("p50", simnet.Quantile(delays, 0.5), "p99", simnet.Quantile(delays, 0.99))
	fmt.Println("served", st.Served, "dropped", st.Overflowed)
	// Output:
	// queueing delays [0s 10ms 20ms]
	// p50 10ms p99 20ms
	// served 3 dropped 2
}

package simnet_test

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/simnet"
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
		Deliver: func(from peer.ID, id receiver.RequestID, resp any) {
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

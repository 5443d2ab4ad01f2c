package fetch_test

import (
	"context"
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
)

// Fetch a ledger through a scheduler from three simulated peers, one of
// which corrupts an object in every answer. (It gets requests: an offer
// lists the least loaded channels first, and its are idle. With a lower
// rate of corruption, a run on the real clock could see it answer honestly
// every time.) The host wires the network to the
// scheduler; the fetch only needs the scheduler and the root hash.
func ExampleRun() {
	l, _ := ledger.Generate(1, 1000)
	s, _ := scheduler.New(scheduler.Config{})
	defer s.Shutdown(context.Background())
	net, _ := simnet.New(simnet.Config{
		Ledger:  l,
		Seed:    1,
		Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = s.Deliver(from, id, r) },
	})
	defer net.Close()
	for i, prof := range []simnet.Profile{
		{Latency: simnet.Fixed(time.Millisecond)},
		{Latency: simnet.Fixed(2 * time.Millisecond)},
		{Latency: simnet.Fixed(time.Millisecond), Faults: simnet.FaultRates{simnet.Corrupt: 1}},
	} {
		p, _ := net.AddPeer(peer.ID(fmt.Sprintf("p%d", i)), prof)
		_ = s.Connect(p, 2)
	}

	rep, err := fetch.Run(context.Background(), s, fetch.Config{Root: l.Root(), Batch: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("complete:", rep.Complete, "objects:", rep.Objects == l.Len(), "bytes:", rep.Bytes == l.Size())
	// Every object verified, so each corrupt one was fetched again. (How
	// many retries that took depends on timing: a corrupt object may have
	// been in flight to another peer already.)
	fmt.Println("corrupt objects caught:", rep.Corrupt > 0)
	// Output:
	// complete: true objects: true bytes: true
	// corrupt objects caught: true
}

// The same fetch the old way: a Peerset is the host, keeps its own set of
// two peers (p0 and p1, the lowest IDs) and its own request IDs and timers.
func ExamplePeerset() {
	l, _ := ledger.Generate(1, 1000)
	ps, _ := fetch.NewPeerset(fetch.Config{Root: l.Root(), Batch: 16})
	net, _ := simnet.New(simnet.Config{
		Ledger:  l,
		Seed:    1,
		Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = ps.Deliver(from, id, r) },
	})
	defer net.Close()
	for i := range 4 {
		p, _ := net.AddPeer(peer.ID(fmt.Sprintf("p%d", i)), simnet.Profile{Latency: simnet.Fixed(time.Millisecond)})
		_ = ps.Connect(p, 2)
	}

	rep, err := ps.Run(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("complete:", rep.Complete, "objects:", rep.Objects == l.Len())
	for _, p := range rep.Peers {
		fmt.Println(p.ID, "served", p.Requests > 0)
	}
	// Output:
	// complete: true objects: true
	// p0 served true
	// p1 served true
}

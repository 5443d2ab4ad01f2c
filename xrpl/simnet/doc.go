// Package simnet simulates peers that serve a ledger, for tests and demos of
// the scheduler. Each simulated Peer implements peer.Peer: the scheduler sends
// it ledger.GetObjects requests, and the network answers with ledger.Objects
// through a host-supplied Deliver function, after delays and with faults that
// each peer's Profile declares: latency distributions, loss, bandwidth,
// a finite capacity (workers, service times and a bounded queue, so that a
// peer pushed too hard answers late and then drops or rejects), slowness
// over time, disconnections, and misbehaviour.
//
// For a peer with a Service, Peer.QueueDelays records how long each request
// waited for a worker, and Stats counts the requests its full queue turned
// away; Quantile gives percentiles of the delays.
//
// All time comes from the injected clock and all randomness from the seed, so
// the same seed, profiles and sequence of Sends replay the same run: the same
// responses, under the same IDs, at the same instants. The network keeps its
// own queue of future events ordered by (time, sequence number) on a single
// clock timer, so it never depends on how a clock orders equal deadlines and
// never starts a goroutine per message.
//
// # Wiring a scheduler
//
// The host glues three callbacks (four, with the optional Refuse) to the
// scheduler and connects each peer it adds:
//
//	net, err := simnet.New(simnet.Config{
//		Ledger: l,
//		Clock:  clk, // the scheduler's clock
//		Seed:   seed,
//		Deliver: func(from peer.ID, id peer.RequestID, resp any) {
//			_ = sched.Deliver(from, id, resp) // errors are the scheduler's to count
//		},
//		Refuse: func(from peer.ID, id peer.RequestID) { // optional
//			_ = sched.Refuse(from, id) // overloaded peers refuse (OverflowReject)
//		},
//		OnDisconnect: func(p *simnet.Peer) { _ = sched.Disconnect(p.ID()) },
//		OnReconnect:  func(p *simnet.Peer) { _ = sched.Connect(p, channels) },
//	})
//	for _, name := range names {
//		p, err := net.AddPeer(peer.ID(name), profile)
//		...
//		err = sched.Connect(p, channels)
//	}
//	defer net.Close()
//
// Senders then send ledger.GetObjects through the scheduler's offers, and
// their receivers get ledger.Objects (or, from a faulty peer, something
// else: receivers must check the type and verify every object).
//
// Give the network and the scheduler the same clock. In tests, create a
// clock.Mock inside a testing/synctest bubble and advance it with Add between
// calls to synctest.Wait; every callback then runs at its exact instant.
package simnet

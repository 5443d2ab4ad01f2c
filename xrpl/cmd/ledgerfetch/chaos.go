package main

import (
	"math/rand/v2"
	"time"

	"github.com/peersched/peersched/peer"
)

// Chaos: some peer goes down every chaosEvery on average, whatever the
// number of peers, and stays down for chaosMeanDown on average (both
// exponentially distributed).
const (
	chaosEvery    = 250 * time.Millisecond
	chaosMeanDown = 300 * time.Millisecond
)

// startChaos kills a random server whose peer is connected now and then,
// and restarts it shortly after, at the rates of the chaos constants, until
// stopFaults; it counts both in events. One server is down at a time.
func (n *tcpNetwork) startChaos(seed uint64, events *peerEvents) {
	n.stopChaos, n.chaosDone = make(chan struct{}), make(chan struct{})
	rng := rand.New(rand.NewPCG(seed, 0x6368616f73)) // "chaos"
	exp := func(mean time.Duration) time.Duration { return time.Duration(rng.ExpFloat64() * float64(mean)) }
	byID := map[peer.ID]int{}
	for i, id := range n.serverIDs {
		byID[id] = i
	}
	go func() {
		defer close(n.chaosDone)
		t := time.NewTimer(time.Hour)
		defer t.Stop()
		wait := func(d time.Duration) bool {
			t.Reset(d)
			select {
			case <-t.C:
				return true
			case <-n.stopChaos:
				return false
			}
		}
		for {
			if !wait(exp(chaosEvery)) {
				return
			}
			// Only a connected peer: a kill the host cannot see would
			// be counted, and never show in the report's failures.
			up := events.live(n.serverIDs)
			if len(up) == 0 {
				continue
			}
			id := up[rng.IntN(len(up))]
			s := n.servers[byID[id]]
			events.killed(id) // first: the host may see it before Kill returns
			s.Kill()
			if !wait(exp(chaosMeanDown)) {
				return
			}
			events.restarted(id, s.Restart()) // fails only if the port was taken meanwhile: the peer stays dead
		}
	}()
}

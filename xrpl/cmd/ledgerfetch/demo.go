package main

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// role is what a demo peer is there to show.
type role string

const (
	honest    role = "honest"
	slow      role = "slow"      // ten times the latency of the others
	dropper   role = "drops"     // drops its connection midway and comes back
	misbehave role = "misbehave" // spoofed IDs, duplicates, corrupt objects, wrong types
)

// demoPeer is one in-process peer: its name, role and behaviour, described
// once and turned into a tcpnet.Behaviour or a simnet.Profile.
type demoPeer struct {
	id      peer.ID
	role    role
	latency simnet.Latency
	loss    float64
	faults  simnet.FaultRates
	// dropAfter is, for the dropper, how many objects it is asked for
	// before it drops (over TCP); dropAt is when it drops (simulated).
	dropAfter int
	dropAt    time.Duration
	// limitsOff turns its rippled limits off (-peer-limits off).
	limitsOff bool
}

// downFor is how long the dropper stays away.
const downFor = 200 * time.Millisecond

// misbehaviourRate is how often a misbehaving peer lies (see
// tcpnet.Misbehaviour): often, but mostly it answers honestly, so that it
// still looks worth asking.
const misbehaviourRate = 0.3

// demoPeers describes the in-process peers. The last -misbehave peers
// misbehave; then, while more than half of the peers would stay honest,
// the one before them is slow and the one before that drops its
// connection midway (none does with -chaos, which kills peers at random
// instead). So p00 stays honest unless every peer must misbehave, and
// adding peers never leaves fewer honest ones. nodes is the ledger's node
// count, to place "midway".
func demoPeers(o options, nodes int) []demoPeer {
	peers := make([]demoPeer, o.peers)
	for i := range peers {
		peers[i] = demoPeer{id: peer.ID(fmt.Sprintf("p%02d", i)), role: honest, loss: o.loss, limitsOff: o.peerLimitsOff}
	}
	next := o.peers - 1
	for range o.misbehave {
		peers[next].role = misbehave
		peers[next].faults = tcpnet.Misbehaviour(misbehaviourRate)
		next--
	}
	// next+1 peers are left; giving one a role leaves next honest.
	honestEnough := func() bool { return 2*next > o.peers }
	if honestEnough() {
		peers[next].role = slow
		next--
	}
	if honestEnough() && !o.chaos {
		peers[next].role = dropper
		// Midway: half of an even share of the nodes, counted in what
		// the requests ask for, since the fetch sizes its batches itself
		// (counted in requests of DefaultBatch, as it once was, the
		// default run's dropper was asked about 60 times, never the 134
		// it waited for, and never dropped).
		peers[next].dropAfter = max(nodes/o.peers/2, 1)
		peers[next].dropAt = time.Second
	}
	for i := range peers {
		scale := 1.0
		if peers[i].role == slow {
			scale = 10
		}
		peers[i].latency = o.latency.forPeer(spread(i), scale)
	}
	return peers
}

// behaviour is p over TCP.
func (p demoPeer) behaviour() tcpnet.Behaviour {
	b := tcpnet.Behaviour{Latency: p.latency, Loss: p.loss, Faults: p.faults}
	if p.role == dropper {
		b.DropAfterObjects, b.DownFor = p.dropAfter, downFor
	}
	return b
}

// profile is p simulated, one of peers. With chaos every peer goes down at
// random, so that some peer does every chaosEvery on average.
func (p demoPeer) profile(chaos bool, peers int) simnet.Profile {
	prof := simnet.Profile{Latency: p.latency, Loss: p.loss, Faults: p.faults, LimitsOff: p.limitsOff}
	switch {
	case chaos:
		prof.RandomOutages = &simnet.RandomOutages{MeanUp: chaosEvery * time.Duration(peers), MeanDown: chaosMeanDown}
	case p.role == dropper:
		prof.Outages = []simnet.Outage{{At: p.dropAt, For: downFor}}
	}
	return prof
}

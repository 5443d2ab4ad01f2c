package scheduler

import (
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// BenchmarkCountRequest times what counting adds to one request's life on
// the hot path: its send counted in all and for its peer, then its answer,
// with its response time, in all and for its peer (the lookups by Ref, as
// the scheduler makes them). Compare with BenchmarkLifecycle in bench/.
func BenchmarkCountRequest(b *testing.B) {
	var pool peer.Pool
	var s Scheduler
	s.peers.keep = DefaultKeepDepartedPeers
	refs := make([]peer.Ref, 8)
	for i := range refs {
		id := peer.ID(rune('a' + i))
		ref, err := pool.Connect(&hostPeer{id: id}, id, 1)
		if err != nil {
			b.Fatal(err)
		}
		refs[i] = ref
		s.peers.connected(ref, id, 0)
	}
	f := receiver.Finished{Receiver: receiver.Funcs{}, PeerID: "a"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		ref := refs[i&7]
		s.counts.sent++
		s.peers.of(ref, f.PeerID).sent++
		f.Peer, f.SentAt = ref, time.Duration(i&0xffff)
		s.countEndLocked(&f, time.Duration(i&0xffff)*1000)
	}
}

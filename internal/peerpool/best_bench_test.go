package peerpool

import (
	"fmt"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
)

// BenchmarkBest ranks the open channels of a pool whose peers are about
// equally loaded, as on a busy node: each peer has a few of its channels
// open and a distinct response time.
func BenchmarkBest(b *testing.B) {
	for _, tc := range []struct {
		peers, channels, open, max int
	}{
		{peers: 10, channels: 1000, open: 4, max: 16},   // an offer capped at 16, as in bench/
		{peers: 10_000, channels: 4, open: 4, max: 0},   // every channel of a large pool, at start
		{peers: 10_000, channels: 4, open: 2, max: 0},   // every open channel, half of them busy
		{peers: 1_000, channels: 64, open: 64, max: 16}, // a few peers' worth out of many
	} {
		name := fmt.Sprintf("peers=%d/open=%d/max=%d", tc.peers, tc.peers*tc.open, tc.max)
		b.Run(name, func(b *testing.B) {
			var pl Pool
			for i := range tc.peers {
				id := peer.ID(fmt.Sprintf("p%05d", i))
				ref, err := pl.Connect(fakePeer(id), id, tc.channels)
				if err != nil {
					b.Fatal(err)
				}
				pl.ObserveRTT(ref, time.Duration(1+i%97)*time.Millisecond)
				for range tc.channels - tc.open {
					pl.Close(ref)
				}
			}
			dst := pl.Best(nil, tc.max)
			b.ReportAllocs()
			for b.Loop() {
				dst = pl.Best(dst[:0], tc.max)
			}
		})
	}
}

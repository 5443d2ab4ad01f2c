package fetch

import (
	"context"
	"fmt"
	"testing"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/simnet"
)

// benchLedger is fetched whole by each iteration of BenchmarkRunChannels.
var benchLedger = mustGenerate(13, 20_000)

// BenchmarkRunChannels fetches a ledger through Run from 16 simulated peers
// that answer at once (no latency: the fetch is all CPU), with 64, 256,
// 4096 and 65,536 fixed channels per peer. What a fetch does per offer and
// per answer must not grow with the channels: ns/op should stay flat across
// the rows (the run with 64 channels is the reference; compare with
// benchstat).
func BenchmarkRunChannels(b *testing.B) {
	for _, channels := range []int{64, 256, 4096, 65_536} {
		b.Run(fmt.Sprintf("channels=%d", channels), func(b *testing.B) {
			for b.Loop() {
				benchFetch(b, channels)
			}
			b.ReportMetric(float64(benchLedger.Len()), "objects/op")
		})
	}
}

func benchFetch(b *testing.B, channels int) {
	clk := clock.New()
	s, err := scheduler.New(scheduler.Config{Clock: clk, RankSeed: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = s.Shutdown(context.Background()) }()
	net, err := simnet.New(simnet.Config{
		Ledger:  benchLedger,
		Clock:   clk,
		Seed:    1,
		Deliver: func(from peer.ID, id peer.RequestID, r any) { _ = s.Deliver(from, id, r) },
	})
	if err != nil {
		b.Fatal(err)
	}
	defer net.Close()
	for i := range 16 {
		p, err := net.AddPeer(simID(i), simnet.Profile{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Connect(p, channels); err != nil {
			b.Fatal(err)
		}
	}
	rep, err := Run(context.Background(), s, Config{Root: benchLedger.Root(), Clock: clk})
	if err != nil || rep.Objects != benchLedger.Len() {
		b.Fatalf("fetch: %v, %d of %d objects", err, rep.Objects, benchLedger.Len())
	}
}

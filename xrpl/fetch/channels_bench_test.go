//go:build unix

package fetch

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/simnet"
)

// benchLedger is fetched whole by each iteration of BenchmarkRunChannels.
var benchLedger = mustGenerate(13, 20_000)

// BenchmarkRunChannels fetches a ledger through Run from 16 simulated peers
// that answer at once (no latency: the fetch is all CPU), with 64, 256,
// 4096 and 65,536 fixed channels per peer. What a fetch does per offer and
// per answer must not grow with the channels: ns/op should stay flat across
// the rows (the run with 64 channels is the reference; compare with
// benchstat). cpu-ns/op is the process's CPU time (user and system) per
// fetch, which a machine shared with other work disturbs less than the
// wall time.
func BenchmarkRunChannels(b *testing.B) {
	for _, channels := range []int{64, 256, 4096, 65_536} {
		b.Run(fmt.Sprintf("channels=%d", channels), func(b *testing.B) {
			before := cpuTime(b)
			for b.Loop() {
				benchFetch(b, channels)
			}
			b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(benchLedger.Len()), "objects/op")
		})
	}
}

// cpuTime returns the CPU time the process has used so far.
func cpuTime(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Skipf("getrusage: %v", err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
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

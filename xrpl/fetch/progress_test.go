package fetch

import (
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
)

// TestInFlightOf: the fetch's requests in flight are its tallied ones, but
// never more than the channels the host holds closed, which the scheduler
// reopens before the fetch has taken an answer in.
func TestInFlightOf(t *testing.T) {
	for _, c := range []struct {
		tallied int
		load    hostLoad
		want    int
	}{
		{0, hostLoad{channels: 64}, 0},
		{10, hostLoad{channels: 64, closed: 12}, 10}, // another sender holds 2
		{64, hostLoad{channels: 64, closed: 64}, 64},
		{70, hostLoad{channels: 64, closed: 64}, 64}, // 6 answers not taken in yet
		{70, hostLoad{channels: 64, closed: 58}, 58},
		{3, hostLoad{}, 0}, // every peer gone
	} {
		if got := inFlightOf(c.tallied, c.load); got != c.want || got > c.load.channels {
			t.Errorf("inFlightOf(%d, %+v) = %d, want %d", c.tallied, c.load, got, c.want)
		}
	}
}

// TestUsageLoad: the scheduler's per-peer usage adds up to the host's load.
func TestUsageLoad(t *testing.T) {
	got := usageLoad([]peer.Usage{
		{ID: "a", Channels: 4, ChannelsOpen: 1, ChannelsClosed: 3, Limit: 4},
		{ID: "b", Channels: 6, ChannelsOpen: 0, ChannelsClosed: 6, Limit: 3}, // its limit fell with 6 out
	})
	if want := (hostLoad{peers: 2, channels: 10, closed: 9}); got != want {
		t.Errorf("usageLoad = %+v, want %+v", got, want)
	}
}

// TestReportBound: the bound is the channels times the batch over the mean
// RTT (Little's law), and the utilisation the rate over it; without an
// answer or a channel there is neither.
func TestReportBound(t *testing.T) {
	for _, c := range []struct {
		channels    float64
		batch       int
		rtt         time.Duration
		rate        float64
		bound, util float64
	}{
		{64, 64, 20 * time.Millisecond, 102_400, 204_800, 0.5},
		{12.5, 16, 10 * time.Millisecond, 20_000, 20_000, 1},
		{8, 64, 0, 1000, 0, 0},
		{0, 64, 10 * time.Millisecond, 1000, 0, 0},
	} {
		r := Report{MeanRTT: Duration(c.rtt), Rate: c.rate}
		r.bound(c.channels, float64(c.batch))
		if r.Channels != c.channels || r.Bound != c.bound || r.Utilisation != c.util {
			t.Errorf("%+v: channels %v, bound %v, utilisation %v", c, r.Channels, r.Bound, r.Utilisation)
		}
	}
}

// TestInFlightWithinChannels: with either strategy, every snapshot's
// InFlight is at most its Channels, which count every connected peer's
// (4 peers of 2 fixed channels here), and the report's bound uses the same
// channels.
func TestInFlightWithinChannels(t *testing.T) {
	for _, strategy := range []string{"scheduler", "peerset"} {
		t.Run(strategy, func(t *testing.T) {
			var got []Progress
			cfg := quick
			cfg.Progress = func(p Progress) { got = append(got, p) }
			o := runSim(t, sim{strategy: strategy, peers: honest(4), channels: 2, cfg: cfg})
			mustComplete(t, o, nil)
			busy := false
			for _, p := range got {
				if p.InFlight > p.Channels || (!p.Done && p.Channels != 8) {
					t.Errorf("progress %+v: in flight beyond the channels, or not 4 x 2 channels", p)
				}
				busy = busy || p.InFlight > 0
			}
			if !busy {
				t.Errorf("no snapshot saw a request in flight: %+v", got)
			}
			if o.rep.Channels <= 0 || o.rep.Channels > 8 || o.rep.Bound <= 0 || o.rep.Utilisation <= 0 || o.rep.Utilisation > 1 {
				t.Errorf("report: channels %v, bound %v, utilisation %v", o.rep.Channels, o.rep.Bound, o.rep.Utilisation)
			}
		})
	}
}

package fetch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/xrpl/resource"
)

// greedyPeak sends queries to a rippled account as fast as a pacer of r
// lets it, starting at phase, for steady; pauses for pause; and sends for a
// minute more. With redial set, the pause is a redial: the sender's pacer
// starts again full (a new connection) while the account keeps its
// balance. It returns the highest balance the account reached.
func greedyPeak(t *testing.T, r limit.Rate, phase, steady, pause time.Duration, redial bool) int64 {
	p, err := limit.NewPacer(r)
	require.NoError(t, err)
	var acct resource.Sample
	var peak int64
	resume := phase + steady + pause
	for now := phase; now < resume+time.Minute; {
		if now >= phase+steady && now < resume {
			now = resume
			if redial {
				p, _ = limit.NewPacer(r)
			}
			continue
		}
		if ok, _ := p.Take(now, r.Cost); !ok {
			now += p.Wait(now)
			continue
		}
		var balance int64
		acct, balance = resource.Charge(acct, int64(now/time.Second), resource.FeeQuery)
		peak = max(peak, balance)
	}
	return peak
}

// TestRippledRate: a sender that the scheduler keeps to RippledRate never
// draws a rippled peer's warning, however it spends its burst: steady,
// after pauses of any length, or redialling at once, with its sends in
// any phase of rippled's whole seconds. The table pins the peaks, and
// shows what a doubled burst or 20 a second would do.
func TestRippledRate(t *testing.T) {
	pauses := []time.Duration{0, time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second,
		32 * time.Second, 64 * time.Second, 200 * time.Second}
	phases := []time.Duration{0, 300 * time.Millisecond, 999 * time.Millisecond}
	worst := func(r limit.Rate, redial bool) int64 {
		var peak int64
		for _, pause := range pauses {
			for _, phase := range phases {
				peak = max(peak, greedyPeak(t, r, phase, 5*time.Minute, pause, redial))
			}
		}
		return peak
	}
	q := int64(resource.FeeQuery)
	for _, c := range []struct {
		r             limit.Rate
		quiet, redial int64 // the worst peaks
	}{
		{RippledRate, 4029, 4370},
		{limit.Rate{Cost: q, PerSecond: 16 * q, Burst: 128 * q}, 4122, 4870}, // within 3% of the warning
		{limit.Rate{Cost: q, PerSecond: 20 * q, Burst: 64 * q}, 5003, 5339},  // warns
	} {
		if got := [2]int64{worst(c.r, false), worst(c.r, true)}; got != [2]int64{c.quiet, c.redial} {
			t.Errorf("%+v: worst peaks %d pausing, %d redialling; want %d, %d", c.r, got[0], got[1], c.quiet, c.redial)
		}
	}
	require.Less(t, worst(RippledRate, true), int64(resource.WarningThreshold))
	require.Equal(t, limit.Rate{Cost: 250, PerSecond: 4000, Burst: 16000}, RippledRate)
}

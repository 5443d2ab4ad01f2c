package timeouts

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
)

const ms = time.Millisecond

// testConfig is the configuration of the tables: round numbers that make
// each formula's terms visible.
var testConfig = EstimatorConfig{Min: 100 * ms, Max: 2 * time.Second, Initial: time.Second, Granularity: ms}

func mustNew(t *testing.T, c EstimatorConfig) *Estimator {
	t.Helper()
	e, err := NewEstimator(c)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestEstimateFollowsRFC6298: one peer's SRTT and RTTVAR, sample by sample,
// against values worked out by hand from RFC 6298's formulas, and the
// deadlines they give.
func TestEstimateFollowsRFC6298(t *testing.T) {
	e := mustNew(t, testConfig)
	if soft, hard := e.Deadlines("a"); soft != 100*ms || hard != time.Second {
		t.Fatalf("before any sample: (%v, %v), want (Min, Initial)", soft, hard)
	}
	for _, c := range []struct {
		rtt, srtt, rttvar, soft, hard time.Duration
	}{
		// First sample: SRTT = R, RTTVAR = R/2; hard 40+4·20, soft 40+2·20.
		{40 * ms, 40 * ms, 20 * ms, 80 * ms, 120 * ms},
		// The same again: RTTVAR = 20 + (0−20)/4; hard 40+60 = 100ms, Min.
		{40 * ms, 40 * ms, 15 * ms, 70 * ms, 100 * ms},
		// A slow one: RTTVAR = 15 + (160−15)/4, SRTT = 40 + 160/8.
		{200 * ms, 60 * ms, 51250 * time.Microsecond, 162500 * time.Microsecond, 265 * ms},
		// A fast one: |60−20| = 40, RTTVAR = 51.25 + (40−51.25)/4 =
		// 48.4375, SRTT = 60 − 40/8.
		{20 * ms, 55 * ms, 48437500, 151875 * time.Microsecond, 248750 * time.Microsecond},
	} {
		e.Observe("a", c.rtt)
		srtt, rttvar, ok := e.Estimate("a")
		soft, hard := e.Deadlines("a")
		if !ok || srtt != c.srtt || rttvar != c.rttvar || soft != c.soft || hard != c.hard {
			t.Errorf("after %v: srtt %v rttvar %v deadlines (%v, %v), want %v %v (%v, %v)",
				c.rtt, srtt, rttvar, soft, hard, c.srtt, c.rttvar, c.soft, c.hard)
		}
	}
}

// step is one call in a scripted test: Observe if rtt is set, Expired if
// expired is, Forget if forget is.
type step struct {
	p       peer.ID
	rtt     time.Duration
	expired bool
	forget  bool
}

func observe(p peer.ID, rtt time.Duration) step { return step{p: p, rtt: rtt} }
func expire(p peer.ID) step                     { return step{p: p, expired: true} }
func forget(p peer.ID) step                     { return step{p: p, forget: true} }

func repeat(n int, s step) []step {
	out := make([]step, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func script(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// TestDeadlines: the deadlines a peer gets after a script of calls, with
// every rule the package documentation gives: the clamp to [Min, Max], G,
// the pool for a peer not heard from, the back-off and its end, Forget, and
// samples outside [0, Max].
func TestDeadlines(t *testing.T) {
	for _, c := range []struct {
		name       string
		cfg        EstimatorConfig
		steps      []step
		ask        peer.ID
		soft, hard time.Duration
	}{
		{"nothing measured", testConfig, nil, "a", 100 * ms, time.Second},
		{"a peer not heard from borrows the pool's estimate", testConfig,
			[]step{observe("a", 40*ms)}, "b", 80 * ms, 120 * ms},
		{"the pool mixes every peer's samples", testConfig,
			// Pool: 40 then 200: RTTVAR 20 + (160−20)/4 = 55, SRTT 40 + 20.
			[]step{observe("a", 40*ms), observe("b", 200*ms)}, "c", 170 * ms, 280 * ms},
		{"a peer's own first sample replaces the borrowed estimate", testConfig,
			[]step{observe("a", 40*ms), observe("b", 400*ms)}, "b", 800 * ms, 1200 * ms},
		{"hard is at least Min, soft has no floor", testConfig,
			[]step{observe("a", 10*ms)}, "a", 20 * ms, 100 * ms},
		{"hard is at most Max, and soft at most hard", testConfig,
			[]step{observe("a", 1500*ms)}, "a", 2 * time.Second, 2 * time.Second},
		{"steady answers: G is the margin left", testConfig,
			// RTTVAR decays to 3ns (a quarter of it truncates to 0 below 4ns).
			repeat(200, observe("a", 10*ms)), "a", 11 * ms, 100 * ms},
		{"a larger G", EstimatorConfig{Min: ms, Max: time.Second, Initial: time.Second, Granularity: 5 * ms},
			repeat(200, observe("a", 10*ms)), "a", 15 * ms, 15 * ms},
		{"one expiry doubles the hard deadline", testConfig,
			[]step{observe("a", 200*ms), expire("a")}, "a", 400 * ms, 1200 * ms},
		{"expiries double up to Max", testConfig,
			script([]step{observe("a", 40*ms)}, repeat(3, expire("a"))), "a", 80 * ms, 960 * ms},
		{"and stop there", testConfig,
			script([]step{observe("a", 40*ms)}, repeat(1000, expire("a"))), "a", 80 * ms, 2 * time.Second},
		{"a sample ends the back-off", testConfig,
			[]step{observe("a", 40*ms), expire("a"), expire("a"), observe("a", 40*ms)}, "a", 70 * ms, 100 * ms},
		{"another peer's expiry changes nothing", testConfig,
			[]step{observe("a", 40*ms), expire("b")}, "a", 80 * ms, 120 * ms},
		{"a peer not heard from backs off the pool's estimate", testConfig,
			[]step{observe("a", 40*ms), expire("b")}, "b", 80 * ms, 240 * ms},
		{"before any sample, the back-off doubles Initial", testConfig,
			[]step{expire("a")}, "a", 100 * ms, 2 * time.Second},
		{"four soft deviations make soft the hard deadline without Min, and it stays as hard doubles", EstimatorConfig{Min: 200 * ms, Max: 10 * time.Second, Initial: time.Second, SoftDeviations: 4},
			// 100 + 4·50 = 300ms for both; then hard doubles to 600ms.
			[]step{observe("a", 100*ms), expire("a")}, "a", 300 * ms, 600 * ms},
		{"Forget drops the peer's own estimate", testConfig,
			[]step{observe("a", 40*ms), observe("b", 400*ms), expire("b"), forget("b")},
			// Pool: 40 then 400: RTTVAR 20 + (360−20)/4 = 105, SRTT 85.
			"b", 295 * ms, 505 * ms},
		{"a sample above Max counts as Max", testConfig,
			[]step{observe("a", time.Hour), observe("a", 0)},
			// 2s then 0: RTTVAR 1s + (2s−1s)/4, SRTT 2s − 2s/8.
			"a", 2 * time.Second, 2 * time.Second},
		{"a negative sample counts as 0", testConfig,
			[]step{observe("a", -time.Second)}, "a", ms, 100 * ms},
		{"soft deviations 1", EstimatorConfig{Min: ms, Max: time.Second, Initial: time.Second, SoftDeviations: 1},
			[]step{observe("a", 40*ms)}, "a", 60 * ms, 120 * ms},
		{"defaults", EstimatorConfig{}, []step{observe("a", 40*ms)}, "a", 80 * ms, 200 * ms},
		{"defaults, nothing measured", EstimatorConfig{}, nil, "a", 200 * ms, time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := mustNew(t, c.cfg)
			for _, s := range c.steps {
				switch {
				case s.expired:
					e.Expired(s.p)
				case s.forget:
					e.Forget(s.p)
				default:
					e.Observe(s.p, s.rtt)
				}
			}
			if soft, hard := e.Deadlines(c.ask); soft != c.soft || hard != c.hard {
				t.Errorf("%s: (%v, %v), want (%v, %v)", c.ask, soft, hard, c.soft, c.hard)
			}
		})
	}
}

// TestPoolAndForget: Estimate and Pool report what was measured, and
// Forget leaves the pool alone.
func TestPoolAndForget(t *testing.T) {
	e := mustNew(t, testConfig)
	if _, _, ok := e.Pool(); ok {
		t.Fatal("a pool before any sample")
	}
	e.Observe("a", 40*ms)
	e.Forget("a")
	if _, _, ok := e.Estimate("a"); ok {
		t.Error("a forgotten peer still has an estimate")
	}
	if srtt, rttvar, ok := e.Pool(); !ok || srtt != 40*ms || rttvar != 20*ms {
		t.Errorf("pool %v %v %v, want 40ms 20ms", srtt, rttvar, ok)
	}
}

// TestDeadlinesStayInRange: whatever the configuration (down to the
// extremes) and whatever the calls, 0 < soft <= hard, Min <= hard <= Max,
// and nothing overflows (an overflow would show as a negative or tiny
// deadline).
func TestDeadlinesStayInRange(t *testing.T) {
	configs := []EstimatorConfig{
		testConfig,
		{},
		{Min: 1, Max: 1, Initial: 1, Granularity: 1},
		{Min: 1, Max: MaxDeadline, Initial: MaxDeadline, Granularity: MaxDeadline, SoftDeviations: 4},
		{Min: MaxDeadline, Max: MaxDeadline},
		{Min: ms, Max: MaxDeadline, SoftDeviations: 1},
	}
	rtts := []time.Duration{0, 1, ms, time.Second, time.Hour, MaxDeadline, math.MaxInt64, math.MinInt64, -1}
	peers := []peer.ID{"a", "b", "c"}
	for i, c := range configs {
		e := mustNew(t, c)
		cfg := e.Config()
		r := rand.New(rand.NewPCG(1, uint64(i)))
		for n := range 20000 {
			p := peers[r.IntN(len(peers))]
			switch r.IntN(10) {
			case 0:
				e.Expired(p)
			case 1:
				e.Forget(p)
			case 2, 3:
				e.Observe(p, time.Duration(r.Int64()))
			default:
				e.Observe(p, rtts[r.IntN(len(rtts))])
			}
			for _, q := range peers {
				soft, hard := e.Deadlines(q)
				if soft <= 0 || soft > hard || hard < cfg.Min || hard > cfg.Max {
					t.Fatalf("config %d, call %d: %s gets (%v, %v), outside 0 < soft <= hard in [%v, %v]", i, n, q, soft, hard, cfg.Min, cfg.Max)
				}
			}
		}
	}
}

// TestConfigDefaultsAndErrors: the zero EstimatorConfig means every default, a
// default adapts to a Max given, and what is out of range fails with
// ErrBadConfig.
func TestConfigDefaultsAndErrors(t *testing.T) {
	for _, c := range []struct {
		in, want EstimatorConfig
	}{
		{EstimatorConfig{}, EstimatorConfig{Min: DefaultMin, Max: DefaultMax, Initial: DefaultInitial, Granularity: DefaultGranularity, SoftDeviations: DefaultSoftDeviations}},
		{EstimatorConfig{Max: 50 * ms}, EstimatorConfig{Min: 50 * ms, Max: 50 * ms, Initial: 50 * ms, Granularity: DefaultGranularity, SoftDeviations: DefaultSoftDeviations}},
		{EstimatorConfig{Min: 3 * time.Second}, EstimatorConfig{Min: 3 * time.Second, Max: DefaultMax, Initial: 3 * time.Second, Granularity: DefaultGranularity, SoftDeviations: DefaultSoftDeviations}},
		{testConfig, EstimatorConfig{Min: 100 * ms, Max: 2 * time.Second, Initial: time.Second, Granularity: ms, SoftDeviations: DefaultSoftDeviations}},
	} {
		e, err := NewEstimator(c.in)
		if err != nil || e.Config() != c.want {
			t.Errorf("%+v: %+v, %v; want %+v", c.in, e.Config(), err, c.want)
		}
	}
	for _, c := range []EstimatorConfig{
		{Min: -1}, {Max: -1}, {Initial: -1}, {Granularity: -1}, {SoftDeviations: -1}, {SoftDeviations: 5},
		{Max: MaxDeadline + 1},
		{Min: 2 * time.Second, Max: time.Second},
		{Min: time.Second, Initial: 500 * ms},
		{Max: time.Second, Initial: 2 * time.Second},
		{Max: time.Second, Granularity: 2 * time.Second},
	} {
		if e, err := NewEstimator(c); !errors.Is(err, ErrBadConfig) || e != nil {
			t.Errorf("%+v: %v, %v; want ErrBadConfig", c, e, err)
		}
	}
}

// TestFixed: the same deadlines for everyone, whatever happens; a Soft of
// zero or above Hard means Hard.
func TestFixed(t *testing.T) {
	for _, c := range []struct {
		f          Fixed
		soft, hard time.Duration
	}{
		{Fixed{Soft: 100 * ms, Hard: time.Second}, 100 * ms, time.Second},
		{Fixed{Hard: time.Second}, time.Second, time.Second},
		{Fixed{Soft: 2 * time.Second, Hard: time.Second}, time.Second, time.Second},
		{Fixed{Soft: -ms, Hard: time.Second}, time.Second, time.Second},
	} {
		var p Policy = c.f
		p.Observe("a", time.Hour)
		p.Expired("a")
		if soft, hard := p.Deadlines("a"); soft != c.soft || hard != c.hard {
			t.Errorf("%+v: (%v, %v), want (%v, %v)", c.f, soft, hard, c.soft, c.hard)
		}
	}
}

// TestEstimatorIsSafeForConcurrentUse: goroutines that share an Estimator
// lose no update. Each expiry of peer a doubles its hard deadline, so a
// lost one shows in the deadline (and -race reports any unguarded access),
// while other goroutines observe and forget other peers and read.
func TestEstimatorIsSafeForConcurrentUse(t *testing.T) {
	e := mustNew(t, EstimatorConfig{Min: 1, Max: MaxDeadline, Initial: 1, Granularity: 1})
	e.Observe("a", 1) // a's own estimate: hard = 1 + max(1, 4·0) = 2ns
	const goroutines, expiries = 4, 12
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for range expiries {
				e.Expired("a")
			}
		}()
		go func() {
			defer wg.Done()
			other := peer.ID(fmt.Sprint("b", g))
			for i := range 50 {
				e.Observe(other, time.Duration(i)*time.Millisecond)
				e.Deadlines("a")
				e.Estimate(other)
				e.Pool()
				if i%10 == 0 {
					e.Forget(other)
				}
			}
		}()
	}
	wg.Wait()
	_, hard := e.Deadlines("a")
	if want := time.Duration(2) << (goroutines * expiries); hard != want {
		t.Fatalf("hard deadline %v after %d expiries, want %v", hard, goroutines*expiries, want)
	}
}

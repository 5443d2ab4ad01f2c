package limit

import (
	"errors"
	"math"
	"testing"
	"time"
)

const ms = time.Millisecond

func TestPipe(t *testing.T) {
	for _, c := range []struct {
		limit       int
		floor, rtt  time.Duration
		want        int
		explanation string
	}{
		{10, 50 * ms, 50 * ms, 10, "no queue"},
		{10, 50 * ms, 40 * ms, 10, "rtt below floor: no queue"},
		{10, 50 * ms, 100 * ms, 5, "twice the floor: half queued"},
		{7, 50 * ms, 70 * ms, 5, "exact"},
		{8, 50 * ms, 70 * ms, 6, "5.71 rounds up"},
		{11, 50 * ms, 70 * ms, 8, "7.86 rounds up"},
		{1, 1, time.Hour, 1, "never below one"},
		{maxInt, time.Hour, 2 * time.Hour, maxInt/2 + 1, "no overflow at the largest limit"},
		{maxInt, time.Duration(1<<63 - 2), time.Duration(1<<63 - 1), maxInt - 1, "nor the largest durations"},
		{1 << 62, 3, 4, 3 << 60, "exact in 128 bits"},
	} {
		if got := pipe(c.limit, c.floor, c.rtt); got != c.want {
			t.Errorf("%s: pipe(%d, %v, %v) = %d, want %d", c.explanation, c.limit, c.floor, c.rtt, got, c.want)
		}
	}
}

func TestFallToAndQueueCmp(t *testing.T) {
	for _, c := range []struct {
		limit       int
		threshold   float64 // requests
		floor, rtt  time.Duration
		fall        int // ⌊pipe + threshold⌋
		cmp         int // sign(queue − threshold)
		explanation string
	}{
		{10, 2, 50 * ms, 50 * ms, 12, -1, "no queue"},
		{10, 2, 50 * ms, 40 * ms, 12, -1, "rtt below floor: no queue"},
		{10, 0, 50 * ms, 50 * ms, 10, 0, "no queue against a threshold of none"},
		{7, 2, 50 * ms, 70 * ms, 7, 0, "exact: queue 2 is not above 2"},
		{8, 2, 50 * ms, 70 * ms, 7, 1, "pipe 5.71: queue 2.29 is above 2, where ⌈5.71⌉ would say 2"},
		{4, 2, 43 * ms, 144 * ms, 3, 1, "pipe 1.19: queue 2.81"},
		{2, 2, 1, time.Hour, 2, -1, "a limit of 2 can have no queue of 2"},
		// Half requests: the default band.
		{4, 1.5, 70 * ms, 145 * ms, 3, 1, "pipe 1.93 + 1.5 = 3.43; queue 2.07 above 1.5"},
		{3, 1.5, 70 * ms, 109 * ms, 3, -1, "queue 1.07 below 1.5"},
		{3, 0.5, 70 * ms, 109 * ms, 2, 1, "and above 0.5: pipe 1.93 + 0.5 = 2.43"},
		{4, 1.5, 50 * ms, 80 * ms, 4, 0, "pipe 2.5 + 1.5 = 4 exactly: queue 1.5 is not above 1.5"},
		{4, 0.5, 1, 2, 2, 1, "fractions adding to a whole: ⌊2 + 0.5⌋"},
		{3, 0.5, 1, 2, 2, 1, "and not: ⌊1.5 + 0.5⌋ = 2"},
		{maxInt, 1, time.Hour, 2 * time.Hour, maxInt/2 + 1, 1, "no overflow at the largest limit"},
		{maxInt, MaxQueueThreshold, 1, time.Duration(1<<63 - 1), MaxQueueThreshold + 1, 1, "nor the largest durations and threshold: pipe exactly 1"},
		{1 << 62, 1, 3, 4, 3<<60 + 1, 1, "exact in 128 bits: queue 2^60 is above 1"},
		{1 << 30, 1 << 20, 3, 4, 3<<28 + 1<<20, 1, "queue 2^28 above 2^20"},
		{1 << 22, 1 << 20, 3, 4, 3<<20 + 1<<20, 0, "queue 2^20 is 2^20"},
	} {
		th := inQueueUnits(c.threshold)
		if got := fallTo(c.limit, c.floor, c.rtt, th); got != c.fall {
			t.Errorf("%s: fallTo(%d, %v, %v, %v) = %d, want %d", c.explanation, c.limit, c.floor, c.rtt, c.threshold, got, c.fall)
		}
		if got := queueCmp(c.limit, c.floor, c.rtt, th); got != c.cmp {
			t.Errorf("%s: queueCmp(%d, %v, %v, %v) = %d, want %d", c.explanation, c.limit, c.floor, c.rtt, c.threshold, got, c.cmp)
		}
	}
	if got := fallTo(maxInt, 1, 1, inQueueUnits(2)); got != maxInt {
		t.Errorf("fallTo saturates: %d", got)
	}
}

func TestBackoff(t *testing.T) {
	for _, c := range []struct{ in, want int }{
		{1, 0}, {2, 1}, {3, 2}, {4, 3}, {7, 6}, {8, 6}, {100, 75}, {maxInt, maxInt - maxInt/4},
	} {
		if got := backoff(c.in); got != c.want {
			t.Errorf("backoff(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestDecide(t *testing.T) {
	// Alpha 1 and Beta 2, whole requests: the band of the cases below.
	// TestDecideDefaultBand has the defaults'.
	one, two := inQueueUnits(1), inQueueUnits(2)
	b := Bounds{Min: 2, Max: 64, Start: 4}
	for _, c := range []struct {
		name          string
		limit         int
		slowStart     bool
		floor, rtt    time.Duration
		inFlight      int
		want          int
		wantSlowStart bool
		mean          time.Duration // the round's mean RTT; 0 means rtt
	}{
		{"slow start doubles with no queue", 10, true, 50 * ms, 50 * ms, 10, 20, true, 0},
		{"slow start stops at max", 40, true, 50 * ms, 50 * ms, 40, 64, true, 0},
		{"after slow start, one more", 10, false, 50 * ms, 50 * ms, 10, 11, false, 0},
		{"one more stops at max", 64, false, 50 * ms, 50 * ms, 64, 64, false, 0},
		{"half the limit in use is enough to grow", 10, false, 50 * ms, 50 * ms, 5, 11, false, 0},
		{"under half in use: hold, still in slow start", 10, true, 50 * ms, 50 * ms, 4, 10, true, 0},
		{"queue 1 = alpha: hold, slow start ends", 6, true, 50 * ms, 60 * ms, 6, 6, false, 0},
		{"queue 2 = beta: hold", 7, false, 50 * ms, 70 * ms, 7, 7, false, 0},
		{"queue 11 − 7.86 > beta: ⌊7.86⌋ + beta", 11, false, 50 * ms, 70 * ms, 11, 9, false, 0},
		// A peer with one worker: 4 in flight, 43ms floor, 144ms round trips
		// (Little's law: 4 service times of 36ms). The pipe is 1.19, so 2.81
		// wait: above beta, though ⌈1.19⌉ would have made it 2.
		{"queue 2.81 > beta: ⌊1.19⌋ + beta", 4, false, 43 * ms, 144 * ms, 4, 3, false, 0},
		{"and at 3, queue 1.81: hold", 3, false, 43 * ms, 108 * ms, 3, 3, false, 0},
		{"overshoot undone in one step", 64, true, 50 * ms, 200 * ms, 64, 18, false, 0},
		{"shrinks even when app-limited", 40, false, 50 * ms, 100 * ms, 1, 22, false, 0},
		{"never below min", 10, false, 10 * ms, 10 * time.Second, 10, 2, false, 0},
		// A burst: half the round came back at the floor, half waited a
		// whole 50ms service time.
		{"slow start: a queue only the mean sees ends it", 32, true, 50 * ms, 50 * ms, 32, 23, false, 75 * ms},
		{"slow start: mean queue 2 = beta: hold, slow start ends", 12, true, 50 * ms, 50 * ms, 12, 12, false, 60 * ms},
		{"slow start: mean queue 0.89 < alpha: double", 12, true, 50 * ms, 50 * ms, 12, 24, true, 54 * ms},
		// A peer with one worker, first round: four requests sent at once
		// to an idle peer, as they were discovered. The first finds its
		// worker free and comes back at the floor; the others waited 32, 54
		// and 86ms for it (as in the capacity experiment's peer p07).
		{"slow start: a first burst does not double", 4, true, 45 * ms, 45 * ms, 4, 4, false, 88 * ms},
		{"after slow start the minimum alone decides", 32, false, 50 * ms, 50 * ms, 32, 33, false, 75 * ms},
	} {
		mean := c.mean
		if mean == 0 {
			mean = c.rtt
		}
		got, ss := decide(c.limit, c.slowStart, c.floor, c.rtt, mean, c.inFlight, one, two, b)
		if got != c.want || ss != c.wantSlowStart {
			t.Errorf("%s: decide = %d, %v; want %d, %v", c.name, got, ss, c.want, c.wantSlowStart)
		}
	}
	// The one case above whose limit falls under Min with these bounds.
	if got, _ := decide(10, false, 10*ms, time.Hour, time.Hour, 10, one, two, Bounds{Min: 4, Max: 64, Start: 4}); got != 4 {
		t.Errorf("clamped to min: %d", got)
	}
	// Huge bounds: doubling and adding one saturate at Max.
	huge := Bounds{Min: 1, Max: maxInt, Start: 1}
	if got, _ := decide(maxInt/2+1, true, 1, 1, 1, maxInt, one, two, huge); got != maxInt {
		t.Errorf("doubling near maxInt: %d", got)
	}
	if got, _ := decide(maxInt, false, 1, 1, 1, maxInt, one, two, huge); got != maxInt {
		t.Errorf("adding one at maxInt: %d", got)
	}
}

// TestDecideDefaultBand: the default band, half a request to one and a half,
// at a peer with one worker that serves a request in 36.4ms, 70ms from us
// when idle (the capacity experiment's peer p13). Its pipe is 1.93 requests;
// a limit of 3 keeps its worker busy with 1.07 requests waiting, 39ms; a
// limit of 4 would make every request wait two service times and more.
func TestDecideDefaultBand(t *testing.T) {
	alpha, beta := inQueueUnits(DefaultAlpha), inQueueUnits(DefaultAlpha+1)
	b := Bounds{Min: 1, Max: 256, Start: 4}
	for _, c := range []struct {
		name       string
		limit      int
		floor, rtt time.Duration
		want       int
	}{
		{"queue 2.07 > 1.5: ⌊1.93 + 1.5⌋", 4, 70 * ms, 145600 * time.Microsecond, 3},
		{"queue 1.07 in the band: hold", 3, 70 * ms, 109200 * time.Microsecond, 3},
		{"queue 0.08 < 0.5: one more", 2, 70 * ms, 72800 * time.Microsecond, 3},
		{"queue 0.5 = alpha: hold", 2, 60 * ms, 80 * ms, 2},
		{"queue 1.5 = beta: hold", 6, 75 * ms, 100 * ms, 6},
		{"queue 1.56 > beta: ⌊5.44 + 1.5⌋", 7, 70 * ms, 90 * ms, 6},
	} {
		if got, _ := decide(c.limit, false, c.floor, c.rtt, c.rtt, c.limit, alpha, beta, b); got != c.want {
			t.Errorf("%s: decide = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestNewVegas(t *testing.T) {
	good := Bounds{Min: 1, Max: 64, Start: 4}
	v, err := NewVegas(VegasConfig{Bounds: good})
	if err != nil {
		t.Fatal(err)
	}
	if v.Limit() != 4 || v.Floor() != 0 || v.alpha != queueUnit/2 || v.beta != 3*queueUnit/2 || v.probeEvery != DefaultProbeEvery {
		t.Errorf("defaults: limit %d floor %v alpha %d beta %d probe %d", v.Limit(), v.Floor(), v.alpha, v.beta, v.probeEvery)
	}
	v, err = NewVegas(VegasConfig{Bounds: good, Alpha: 3, ProbeEvery: -1})
	if err != nil || v.alpha != 3*queueUnit || v.beta != 4*queueUnit || v.probeEvery != -1 {
		t.Errorf("alpha 3: %v, beta %d", err, v.beta)
	}
	v, err = NewVegas(VegasConfig{Bounds: good, Alpha: 0.25, Beta: 0.3})
	if err != nil || v.alpha != 256 || v.beta != 307 {
		t.Errorf("alpha 0.25, beta 0.3: %v, alpha %d beta %d (in 1/1024 requests)", err, v.alpha, v.beta)
	}
	if _, err = NewVegas(VegasConfig{Bounds: good, Alpha: MaxQueueThreshold, Beta: MaxQueueThreshold}); err != nil {
		t.Errorf("the largest thresholds: %v", err)
	}
	for name, c := range map[string]struct {
		cfg  VegasConfig
		want error
	}{
		"bounds":         {VegasConfig{Bounds: Bounds{Min: 2, Max: 1, Start: 1}}, ErrBadBounds},
		"negative alpha": {VegasConfig{Bounds: good, Alpha: -1}, ErrBadConfig},
		"negative beta":  {VegasConfig{Bounds: good, Beta: -1}, ErrBadConfig},
		"beta < alpha":   {VegasConfig{Bounds: good, Alpha: 3, Beta: 2}, ErrBadConfig},
		"huge alpha":     {VegasConfig{Bounds: good, Alpha: MaxQueueThreshold + 1}, ErrBadConfig},
		"huge beta":      {VegasConfig{Bounds: good, Beta: MaxQueueThreshold + 1}, ErrBadConfig},
		"NaN alpha":      {VegasConfig{Bounds: good, Alpha: math.NaN()}, ErrBadConfig},
		"NaN beta":       {VegasConfig{Bounds: good, Beta: math.NaN()}, ErrBadConfig},
		"infinite beta":  {VegasConfig{Bounds: good, Beta: math.Inf(1)}, ErrBadConfig},
	} {
		if _, err := NewVegas(c.cfg); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// step is one sample fed to a Vegas and the limit and floor expected after it.
type step struct {
	n         int // the sample is repeated n times (0 counts as 1)
	s         Sample
	limit     int
	floor     time.Duration
	otherwise string
}

func run(t *testing.T, v *Vegas, steps []step) {
	t.Helper()
	for i, st := range steps {
		for range max(st.n, 1) {
			v.Observe(st.s)
		}
		if v.Limit() != st.limit || v.Floor() != st.floor {
			t.Fatalf("step %d (%s): limit %d floor %v, want %d %v", i, st.otherwise, v.Limit(), v.Floor(), st.limit, st.floor)
		}
	}
}

func answered(rtt time.Duration, inFlight int) Sample {
	return Sample{Outcome: Answered, RTT: rtt, InFlight: inFlight}
}

func newVegas(t *testing.T, cfg VegasConfig) *Vegas {
	t.Helper()
	v, err := NewVegas(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The scripts below use a band of whole requests, Alpha 1 and Beta 2, to keep
// their arithmetic easy to follow; TestDecide covers the default band.

func TestVegasSlowStartThenQueue(t *testing.T) {
	v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 100, Start: 4}, Alpha: 1, Beta: 2, ProbeEvery: -1})
	run(t, v, []step{
		{n: 3, s: answered(50*ms, 4), limit: 4, floor: 50 * ms, otherwise: "mid-round: nothing moves"},
		{s: answered(50*ms, 4), limit: 8, floor: 50 * ms, otherwise: "a round of 4 at the floor doubles"},
		{n: 8, s: answered(50*ms, 4), limit: 8, floor: 50 * ms, otherwise: "settling round of 8 decides nothing"},
		{n: 8, s: answered(50*ms, 8), limit: 16, floor: 50 * ms, otherwise: "doubles again"},
		{n: 16, s: answered(50*ms, 8), limit: 16, floor: 50 * ms, otherwise: "settling"},
		{n: 16, s: answered(50*ms, 16), limit: 32, floor: 50 * ms, otherwise: "doubles"},
		{n: 32, s: answered(50*ms, 16), limit: 32, floor: 50 * ms, otherwise: "settling"},
		// At 32 the peer queues: 100ms RTTs mean half the requests wait.
		{n: 32, s: answered(100*ms, 32), limit: 18, floor: 50 * ms, otherwise: "pipe 16 + beta 2"},
		{n: 32, s: answered(100*ms, 32), limit: 18, floor: 50 * ms, otherwise: "settling lasts the old limit, 32"},
		// At 18 with 55ms RTTs: pipe ⌈18·50/55⌉ = 17, queue 1: hold.
		{n: 18, s: answered(55*ms, 18), limit: 18, floor: 50 * ms, otherwise: "queue 1: hold, slow start over"},
		{n: 18, s: answered(50*ms, 18), limit: 19, floor: 50 * ms, otherwise: "no queue: one more, not double"},
		{n: 19, s: answered(50*ms, 19), limit: 19, floor: 50 * ms, otherwise: "settling"},
		{n: 19, s: answered(50*ms, 19), limit: 20, floor: 50 * ms, otherwise: "one more"},
	})
}

// TestVegasMinimumAndMean: after slow start, one fast answer in a round of
// slow ones shows that the round saw no standing queue, and the limit grows;
// in slow start the same round's mean shows the others' wait, and slow
// start ends on it.
func TestVegasMinimumAndMean(t *testing.T) {
	v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 100, Start: 8}, ProbeEvery: -1})
	v.slowStart = false
	run(t, v, []step{
		{n: 7, s: answered(500*ms, 8), limit: 8, floor: 500 * ms},
		{s: answered(50*ms, 8), limit: 9, floor: 50 * ms, otherwise: "the round's minimum decides: one more"},
	})

	v = newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 100, Start: 8}, ProbeEvery: -1})
	run(t, v, []step{
		{n: 7, s: answered(500*ms, 8), limit: 8, floor: 500 * ms},
		// Mean 443.75ms: the mean pipe is 8·50/443.75 = 0.9, so 7.1 queued.
		{s: answered(50*ms, 8), limit: 2, floor: 50 * ms, otherwise: "slow start: the mean pipe ⌊0.9⌋ + beta"},
		{n: 8, s: answered(50*ms, 2), limit: 2, floor: 50 * ms, otherwise: "settling lasts the old limit, 8"},
		{n: 2, s: answered(50*ms, 2), limit: 3, floor: 50 * ms, otherwise: "slow start is over: one more"},
	})
}

func TestVegasLoss(t *testing.T) {
	v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 2, Max: 100, Start: 8}, ProbeEvery: -1})
	run(t, v, []step{
		{n: 7, s: answered(50*ms, 8), limit: 8, floor: 50 * ms},
		{s: Sample{Outcome: TimedOut, RTT: 5 * time.Second, InFlight: 8}, limit: 6, floor: 50 * ms, otherwise: "a quarter less; timeouts set no floor"},
		// Losses act even in a settling round, once per round however many.
		{n: 8, s: Sample{Outcome: Failed, InFlight: 8}, limit: 5, floor: 50 * ms, otherwise: "settling round of 8 with losses"},
		{n: 6, s: Sample{Outcome: Outcome(200), InFlight: 6}, limit: 4, floor: 50 * ms, otherwise: "unknown outcomes are losses"},
		{n: 5, s: Sample{Outcome: TimedOut}, limit: 3, floor: 50 * ms},
		{n: 4, s: Sample{Outcome: TimedOut}, limit: 2, floor: 50 * ms},
		{n: 3, s: Sample{Outcome: TimedOut}, limit: 2, floor: 50 * ms, otherwise: "never below min"},
		// The clamped loss changed nothing, so the next round decides; slow
		// start ended with the first loss, so growth is one at a time.
		{n: 2, s: answered(50*ms, 2), limit: 3, floor: 50 * ms, otherwise: "one more"},
		{n: 3, s: answered(50*ms, 3), limit: 3, floor: 50 * ms, otherwise: "settling"},
		{n: 3, s: answered(50*ms, 3), limit: 4, floor: 50 * ms, otherwise: "one more"},
	})
}

func TestVegasNoAnswerNoDecision(t *testing.T) {
	v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 100, Start: 2}, ProbeEvery: -1})
	// Zero and negative RTTs count as 1ns.
	run(t, v, []step{
		{n: 2, s: answered(0, 2), limit: 4, floor: 1},
		{n: 4, s: answered(-5, 4), limit: 4, floor: 1, otherwise: "settling"},
		{n: 4, s: answered(1, 4), limit: 8, floor: 1},
	})
}

func TestVegasProbeRemeasuresFloor(t *testing.T) {
	v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 100, Start: 10}, Alpha: 1, Beta: 2, ProbeEvery: 2})
	v.slowStart = false // start in congestion avoidance to keep the script short
	run(t, v, []step{
		{n: 10, s: answered(50*ms, 10), limit: 11, floor: 50 * ms, otherwise: "deciding round 1"},
		{n: 11, s: answered(50*ms, 11), limit: 11, floor: 50 * ms, otherwise: "settling"},
		// The path slows: RTTs of 60ms look like a queue of 1 at limit 11
		// (pipe ⌈11·50/60⌉ = 10): hold. Deciding round 2 starts the probe:
		// 11 saved, drain to half the pipe, 5.
		{n: 11, s: answered(60*ms, 11), limit: 5, floor: 50 * ms, otherwise: "probe: drain"},
		{n: 11, s: answered(60*ms, 11), limit: 5, floor: 50 * ms, otherwise: "draining lasts the old limit"},
		{n: 4, s: answered(60*ms, 5), limit: 5, floor: 50 * ms, otherwise: "measuring"},
		{s: answered(61*ms, 5), limit: 11, floor: 60 * ms, otherwise: "the floor is the measured minimum; the limit returns"},
		{n: 11, s: answered(60*ms, 11), limit: 11, floor: 60 * ms, otherwise: "settling"},
		{n: 11, s: answered(60*ms, 11), limit: 12, floor: 60 * ms, otherwise: "with the new floor there is no queue: grow"},
	})
}

func TestVegasProbeIgnoresLossesAndLowersFloor(t *testing.T) {
	v := newVegas(t, VegasConfig{Bounds: Bounds{Min: 1, Max: 100, Start: 6}, ProbeEvery: 1})
	v.slowStart = false
	run(t, v, []step{
		{n: 6, s: answered(50*ms, 6), limit: 3, floor: 50 * ms, otherwise: "7 saved; drain to half the pipe, 3"},
		{n: 6, s: Sample{Outcome: TimedOut}, limit: 3, floor: 50 * ms, otherwise: "losses while draining are ignored"},
		{n: 2, s: Sample{Outcome: TimedOut}, limit: 3, floor: 50 * ms, otherwise: "and while measuring"},
		{s: answered(40*ms, 3), limit: 7, floor: 40 * ms, otherwise: "a lower floor, and back to the saved 7"},
		{n: 7, s: answered(40*ms, 7), limit: 7, floor: 40 * ms, otherwise: "settling"},
		{n: 7, s: answered(80*ms, 7), limit: 2, floor: 40 * ms, otherwise: "pipe 7·40/80 = 3.5, queue 3.5: ⌊3.5⌋ + beta = 5 saved, drain to ⌈3.5⌉/2 = 2"},
		{n: 7, s: answered(80*ms, 7), limit: 2, floor: 40 * ms, otherwise: "draining lasts the old limit, 7"},
		{n: 2, s: Sample{Outcome: TimedOut}, limit: 5, floor: 40 * ms, otherwise: "nothing measured: the floor stays; back to 5"},
	})
	// The drain never goes under Min.
	v = newVegas(t, VegasConfig{Bounds: Bounds{Min: 3, Max: 100, Start: 4}, ProbeEvery: 1})
	run(t, v, []step{{n: 4, s: answered(50*ms, 4), limit: 3, floor: 50 * ms, otherwise: "half of 4 is 2, under Min"}})
}

func TestDrain(t *testing.T) {
	for _, c := range []struct {
		limit      int
		floor, rtt time.Duration
		want       int
	}{
		{10, 50 * ms, 50 * ms, 5},
		{11, 50 * ms, 50 * ms, 5},
		{11, 50 * ms, 60 * ms, 5}, // pipe 10
		{7, 40 * ms, 80 * ms, 2},  // pipe 4
		{1, 50 * ms, 50 * ms, 0},  // the caller clamps to Min
	} {
		if got := drain(c.limit, c.floor, c.rtt); got != c.want {
			t.Errorf("drain(%d, %v, %v) = %d, want %d", c.limit, c.floor, c.rtt, got, c.want)
		}
	}
}

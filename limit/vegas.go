package limit

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"
)

// VegasConfig configures a Vegas limiter. Zero fields other than Bounds take
// their defaults.
type VegasConfig struct {
	// Bounds are the host's bounds for the peer. Required.
	Bounds Bounds
	// Alpha, in requests: while the estimated queue at the peer is below
	// Alpha (and the peer was pushed to at least half the limit), the limit
	// grows. It may be fractional; it is kept to 1/1024 of a request. 0
	// means DefaultAlpha.
	Alpha float64
	// Beta, in requests: when the estimated queue is above Beta, the limit
	// falls to the largest whole number at most the estimated pipe plus
	// Beta. 0 means Alpha + 1. Must be at least Alpha and at most
	// MaxQueueThreshold. A band narrower than one request (Beta − Alpha < 1)
	// may hold no whole limit, and the limit then swings across it.
	Beta float64
	// ProbeEvery is how many deciding rounds pass between two re-measurements
	// of the RTT floor (see Vegas). 0 means 100; a negative value never
	// re-measures, and the floor then only ever falls.
	ProbeEvery int
}

// Defaults of VegasConfig.
const (
	// DefaultAlpha keeps half a request waiting at the peer at the least:
	// enough that a worker finishing a request usually finds the next one
	// there, where a whole request would add a service time of waiting to
	// every request at a peer with one worker. With the default Beta, the
	// queue is held between half a request and one and a half.
	DefaultAlpha      = 0.5
	DefaultProbeEvery = 100
	// MaxQueueThreshold is the largest Alpha or Beta, in requests.
	MaxQueueThreshold = 1 << 20
)

// queueUnit is the resolution of Alpha and Beta: they are held as whole
// numbers of 1/queueUnit requests, so every comparison with them is exact
// integer arithmetic. A power of two, so that scaling by it is a shift.
const (
	queueShift = 10
	queueUnit  = 1 << queueShift
)

// ErrBadConfig is returned by NewVegas for parameters that make no limiter.
var ErrBadConfig = errors.New("limit: bad config")

// Vegas is an adaptive Limiter for one peer. It estimates how many of the
// peer's requests in flight are waiting in the peer's queue rather than
// being served or travelling, from the round-trip time against the lowest
// one seen (the floor), and keeps that queue between Alpha and Beta. The
// package documentation says why this algorithm; this comment says exactly
// what it does.
//
// # Rounds
//
// Vegas decides once per round, not per sample: a round ends after as many
// samples (of any outcome) as the limit was when the round began, about one
// round trip of responses when the peer is kept busy. A round records its
// smallest answered RTT (roundMin) and their mean (roundMean), the largest
// Sample.InFlight, and whether any request timed out or failed. Every
// answered RTT also lowers the floor if it is below it.
//
// At the end of a round, in this order:
//
//   - Loss: if any request in the round timed out or failed, the limit falls
//     by a quarter (at least by one) and slow start ends.
//   - Settling: a round that began with a change of the limit decides
//     nothing more, because its samples were mostly sent under the old
//     limit. It lasts as many samples as the larger of the old and new
//     limits.
//   - Otherwise, in slow start, the round's mean comes first: if the mean
//     pipe estimate Pm = L·floor/roundMean leaves a queue L − Pm above
//     Beta, the limit becomes ⌊Pm + Beta⌋ and slow start ends.
//   - Otherwise, with limit L, the pipe estimate P = L·floor/roundMin is
//     how many requests the peer holds without queueing them (Little's law),
//     and Q = L − P is the estimated queue. If Q > Beta the limit becomes
//     ⌊P + Beta⌋ and slow start ends. If Q < Alpha and the round's largest
//     InFlight is at least L/2, the limit doubles while in slow start (if
//     the mean's queue L − Pm is below Alpha too; otherwise slow start ends
//     and the limit holds) and grows by one after it. If Alpha ≤ Q ≤ Beta,
//     slow start ends and the limit holds. A round with no answered sample
//     decides nothing. P and Q are compared unrounded (see decide for why
//     that matters).
//
// Why the mean in slow start: the minimum is robust to jitter (a path whose
// latency varies shows no queue in its fastest answer), but it misses a
// queue that drains in every round. A sender that refills channels as a
// round of answers comes back sends in bursts, and a peer whose service
// times are alike then frees its workers in waves: each wave's first
// requests find idle workers and come back at the floor, while the rest of
// the burst waits a whole service time. The minimum then says "no queue"
// however long the burst, and slow start would double until the peer's
// queue overflows. The mean sees the wait (by Little's law it is what the
// limit costs), at the price of counting jitter above the floor as queue;
// that bias only ends slow start a little early, and congestion avoidance,
// on the minimum, takes the limit the rest of the way.
//
// Slow start is on from the beginning until the first round that sees a
// queue or a loss.
//
// # Re-measuring the floor
//
// A floor taken as the all-time minimum can only fall; if the peer's path
// gets slower, Vegas would mistake the extra delay for queueing and hold the
// limit too low for good. Taking a windowed minimum instead would let the
// standing queue of Alpha..Beta requests creep into the floor, window after
// window. So every ProbeEvery deciding rounds, Vegas drains its own queue
// first: for one round (as long as the old limit) the limit is half the pipe
// estimate rounded up, ⌊⌈P⌉/2⌋; during the next round (as long as that) it measures, and
// the floor becomes that round's roundMin, higher or lower than before. Then
// the limit returns to the value the deciding round gave it. The two probe
// rounds ignore losses, and one that measures nothing keeps the old floor.
//
// Why half the pipe and not the pipe itself: the pipe estimate rests on the
// floor being re-measured, so if that floor is a little high the pipe is a
// little large, a little queue survives the drain, the next floor is higher
// still, and the error feeds itself. Half the pipe empties the queue unless
// the floor is off by a factor of two. It costs about half the peer's
// throughput for two rounds in every ProbeEvery+2, under 1% by default.
//
// A Vegas is not safe for concurrent use (the scheduler guards it). The zero
// value is not usable; build one with NewVegas.
type Vegas struct {
	bounds      Bounds
	alpha, beta int64 // in 1/queueUnit requests
	probeEvery  int

	limit     int
	floor     time.Duration // smallest answered RTT; 0 before the first
	slowStart bool
	settling  bool // the current round began with a change of the limit
	probe     probePhase
	saved     int // the limit to return to after a probe
	rounds    int // deciding rounds since the last probe

	// The current round.
	roundLen      int
	seen          int
	roundMin      time.Duration // 0: nothing answered yet in the round
	roundSum      time.Duration // of the round's answered RTTs, for the mean
	roundAnswered int
	roundInFlight int
	roundLoss     bool
}

type probePhase uint8

const (
	notProbing probePhase = iota
	draining              // the limit is the pipe estimate; old requests come back
	measuring             // requests sent after the drain come back; their minimum becomes the floor
)

var _ Limiter = (*Vegas)(nil)

// NewVegas returns a Vegas limiter at cfg.Bounds.Start, in slow start, with
// no floor yet. It fails with an error wrapping ErrBadBounds or
// ErrBadConfig.
func NewVegas(cfg VegasConfig) (*Vegas, error) {
	if err := cfg.Bounds.Validate(); err != nil {
		return nil, err
	}
	alpha, beta, probe := cfg.Alpha, cfg.Beta, cfg.ProbeEvery
	if alpha == 0 {
		alpha = DefaultAlpha
	}
	if beta == 0 {
		beta = alpha + 1
	}
	// The negated comparisons also refuse NaN.
	if !(alpha >= 0 && alpha <= MaxQueueThreshold) || !(beta >= alpha && beta <= MaxQueueThreshold) {
		return nil, fmt.Errorf("%w: need 0 <= alpha <= beta <= %d, got alpha %v beta %v", ErrBadConfig, MaxQueueThreshold, cfg.Alpha, cfg.Beta)
	}
	if probe == 0 {
		probe = DefaultProbeEvery
	}
	b := cfg.Bounds
	return &Vegas{
		bounds: b, alpha: inQueueUnits(alpha), beta: inQueueUnits(beta), probeEvery: probe,
		limit: b.Start, slowStart: true, roundLen: b.Start,
	}, nil
}

// Limit returns the current limit, within the bounds.
func (v *Vegas) Limit() int { return v.limit }

// Floor returns the RTT floor: the smallest answered RTT since the last
// re-measurement, or 0 before any answer.
func (v *Vegas) Floor() time.Duration { return v.floor }

// Observe records one ended request and, if it completes a round, adjusts
// the limit as the type's documentation says. Outcomes other than Answered
// (including values this package does not define) count as losses.
func (v *Vegas) Observe(s Sample) {
	if s.Outcome == Answered {
		rtt := max(s.RTT, 1)
		if v.floor == 0 || rtt < v.floor {
			v.floor = rtt
		}
		if v.roundMin == 0 || rtt < v.roundMin {
			v.roundMin = rtt
		}
		v.roundSum = addSaturating(v.roundSum, rtt)
		v.roundAnswered++
	} else {
		v.roundLoss = true
	}
	v.roundInFlight = max(v.roundInFlight, s.InFlight)
	v.seen++
	if v.seen >= v.roundLen {
		v.endRound()
	}
}

// endRound applies a finished round and starts the next.
func (v *Vegas) endRound() {
	old := v.limit
	next := old
	switch {
	case v.probe == draining:
		v.probe = measuring
	case v.probe == measuring:
		if v.roundMin > 0 {
			v.floor = v.roundMin
		}
		v.probe = notProbing
		v.rounds = 0
		next = v.saved
	case v.roundLoss:
		next = backoff(old)
		v.slowStart = false
	case v.settling || v.roundMin == 0:
		// Samples from before the last change, or no RTT at all: nothing to
		// decide on.
	default:
		mean := v.roundSum / time.Duration(v.roundAnswered)
		next, v.slowStart = decide(old, v.slowStart, v.floor, v.roundMin, mean, v.roundInFlight, v.alpha, v.beta, v.bounds)
		v.rounds++
		if v.probeEvery > 0 && v.rounds >= v.probeEvery {
			v.saved = v.bounds.clamp(next)
			v.probe = draining
			next = drain(old, v.floor, v.roundMin)
		}
	}
	v.limit = v.bounds.clamp(next)
	v.settling = v.limit != old
	v.roundLen = max(old, v.limit)
	v.seen, v.roundMin, v.roundSum, v.roundAnswered, v.roundInFlight, v.roundLoss = 0, 0, 0, 0, 0, false
}

// decide is one deciding round of Vegas as pure arithmetic: the limit after
// a round that ran at limit with the given floor, smallest RTT and largest
// in-flight count, and whether slow start goes on. alpha and beta are in
// 1/queueUnit requests. The result is within b. floor, roundMin and
// roundMean are positive; floor <= roundMin <= roundMean.
func decide(limit int, slowStart bool, floor, roundMin, roundMean time.Duration, maxInFlight int, alpha, beta int64, b Bounds) (int, bool) {
	if slowStart && queueCmp(limit, floor, roundMean, beta) > 0 {
		return b.clamp(fallTo(limit, floor, roundMean, beta)), false
	}
	switch {
	case queueCmp(limit, floor, roundMin, beta) > 0:
		return b.clamp(fallTo(limit, floor, roundMin, beta)), false
	case queueCmp(limit, floor, roundMin, alpha) >= 0:
		return limit, false
	case maxInFlight < limit-maxInFlight: // under half the limit in use: no evidence more would help
		return limit, slowStart
	case slowStart && queueCmp(limit, floor, roundMean, alpha) >= 0:
		// The fastest answer saw no queue but the answers on average did:
		// the round's burst filled the peer's queue as it went. Doubling
		// now would double that queue. (After slow start the minimum alone
		// decides: on a path with jitter the mean always shows a queue.)
		return limit, false
	case slowStart:
		if limit > b.Max/2 {
			return b.Max, true
		}
		return b.clamp(2 * limit), true
	default:
		if limit >= b.Max {
			return b.Max, false
		}
		return b.clamp(limit + 1), false
	}
}

// The pipe estimate x = limit·floor/rtt is a real number, and so is the
// queue estimate limit − x: both are compared with Alpha and Beta exactly,
// in 128-bit integer arithmetic, never rounded to whole requests first.
// Rounding x up would forgive up to a whole request of queue, which at a
// peer with one worker is a whole service time more of waiting for every
// request.

// queueCmp is sign(Q − t) for the queue estimate
// Q = limit·(rtt − floor)/rtt and a threshold t in 1/queueUnit requests,
// 0 <= t <= MaxQueueThreshold·queueUnit: -1, 0 or +1. An rtt at or below
// the floor means no queue.
func queueCmp(limit int, floor, rtt time.Duration, t int64) int {
	if rtt <= floor {
		if t > 0 {
			return -1
		}
		return 0
	}
	// Compare limit·(rtt − floor)·queueUnit with t·rtt. The right side is
	// below 2^30·2^63 = 2^93, so a left side whose product with queueUnit
	// would not fit in 128 bits is larger.
	hi, lo := bits.Mul64(uint64(limit), uint64(rtt-floor))
	if hi >= 1<<(64-queueShift) {
		return 1
	}
	hi, lo = hi<<queueShift|lo>>(64-queueShift), lo<<queueShift
	thi, tlo := bits.Mul64(uint64(t), uint64(rtt))
	return cmp128(hi, lo, thi, tlo)
}

// cmp128 compares the 128-bit numbers (hi1, lo1) and (hi2, lo2): -1, 0 or
// +1.
func cmp128(hi1, lo1, hi2, lo2 uint64) int {
	switch {
	case hi1 != hi2:
		if hi1 < hi2 {
			return -1
		}
		return 1
	case lo1 < lo2:
		return -1
	case lo1 > lo2:
		return 1
	}
	return 0
}

// fallTo is the limit after a round that saw too much queue: the largest
// whole number at most x + beta, for the pipe estimate x = limit·floor/rtt
// and beta in 1/queueUnit requests, that is ⌊x + beta⌋. It saturates at the
// largest int.
func fallTo(limit int, floor, rtt time.Duration, beta int64) int {
	whole, frac := int(beta/queueUnit), uint64(beta%queueUnit)
	if rtt <= floor {
		return addSaturatingInt(limit, whole)
	}
	q, rem := pipeDiv(limit, floor, rtt)
	// The fractions of x and of beta add up to a whole request when
	// rem/rtt + frac/queueUnit >= 1, that is rem·queueUnit >= (queueUnit − frac)·rtt.
	hi1, lo1 := bits.Mul64(rem, queueUnit)
	hi2, lo2 := bits.Mul64(queueUnit-frac, uint64(rtt))
	if cmp128(hi1, lo1, hi2, lo2) >= 0 {
		whole++
	}
	return addSaturatingInt(q, whole)
}

// pipe is the pipe estimate rounded up, ⌈limit·floor/rtt⌉: by Little's law,
// the number of the limit's requests that are being served or travelling
// rather than queued, when the peer answers in rtt what it answers in floor
// when idle. It is computed in 128 bits, so no limit or duration overflows
// it. It returns limit when rtt <= floor.
func pipe(limit int, floor, rtt time.Duration) int {
	if rtt <= floor {
		return limit
	}
	q, r := pipeDiv(limit, floor, rtt)
	if r != 0 {
		q++
	}
	return q // q <= limit
}

// pipeDiv returns limit·floor/rtt as a quotient and a remainder, for
// floor < rtt.
func pipeDiv(limit int, floor, rtt time.Duration) (q int, r uint64) {
	hi, lo := bits.Mul64(uint64(limit), uint64(floor))
	quo, rem := bits.Div64(hi, lo, uint64(rtt)) // hi < rtt because floor < rtt
	return int(quo), rem
}

// inQueueUnits converts a threshold in requests, 0 <= x <=
// MaxQueueThreshold, to the nearest whole number of 1/queueUnit requests.
func inQueueUnits(x float64) int64 { return int64(math.Round(x * queueUnit)) }

// addSaturatingInt returns a+b for non-negative ints, or the largest int if
// that overflows.
func addSaturatingInt(a, b int) int {
	if a > maxInt-b {
		return maxInt
	}
	return a + b
}

// addSaturating returns a+b for non-negative durations, or the largest
// Duration if that overflows.
func addSaturating(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// drain is the limit of a probe's draining round: half the pipe estimate
// of the round that started the probe (the type's documentation says why
// half).
func drain(limit int, floor, roundMin time.Duration) int { return pipe(limit, floor, roundMin) / 2 }

// backoff is the limit after a round with a loss: a quarter less, and at
// least one less.
func backoff(limit int) int { return limit - max(1, limit/4) }

package simnet

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Profile describes how one simulated peer behaves. It is declarative: AddPeer
// reads it once and the peer follows it from then on, every random choice
// drawn from a source seeded by the network's seed and the peer's ID. The
// zero Profile is a perfect peer: it answers every request honestly, after
// no delay, and never disconnects.
type Profile struct {
	// Latency is the delay from a request's Send until its response is ready
	// to leave the peer; with a Service, from the end of the request's
	// service instead.
	Latency Latency

	// Service gives the peer a finite capacity: workers, service times and
	// a bounded queue (see Service). The zero Service is unlimited.
	Service Service

	// Loss is the probability, in [0, 1], that a request is silently dropped
	// and never answered.
	Loss float64

	// Bandwidth caps the peer's uplink, in bytes per second; 0 is unlimited.
	// A response occupies the link for its wire size (wire.MessageSize)
	// divided by Bandwidth, one response at a time in the
	// order the requests were sent, and arrives when its transmission ends.
	Bandwidth int64

	// Slowness multiplies the latency (and service time) of requests sent
	// from each step's At (measured from AddPeer) onwards, until the next
	// step. Steps must be in
	// increasing order of At with positive factors; before the first step the
	// factor is 1.
	Slowness []Slowdown

	// Outages are scheduled disconnections, measured from AddPeer. They must
	// be in order and must not overlap; only the last may last forever.
	Outages []Outage
	// RandomOutages, if set, disconnects the peer after exponentially
	// distributed up-times and reconnects it after exponentially distributed
	// down-times, for as long as the network runs. It cannot be combined with
	// Outages.
	RandomOutages *RandomOutages

	// Missing is the probability, in [0, 1], that the peer lacks each
	// requested object and leaves it out of its answer. This is honest behaviour
	// (a peer that does not have everything), not a fault.
	Missing float64

	// Faults gives, for each Fault, the probability that a request triggers
	// it. At most one fault applies to a request, so the probabilities must
	// add up to at most 1. Loss is decided first: a lost request has no
	// fault.
	Faults FaultRates
	// LateBy is how much later than normal a Late response arrives; zero
	// means DefaultLateBy.
	LateBy time.Duration

	// LimitsOff turns off the limits a rippled peer puts on what the host
	// sends it (see Peer), to compare with a peer that has them, the
	// default: the peer then never cuts the host off for its charges and
	// never drops a request because its send queue is long. It still
	// charges and counts (Stats.Resources), as a peer that only logged
	// would.
	LimitsOff bool
}

// Slowdown is one step of a Profile's slowness schedule.
type Slowdown struct {
	At     time.Duration // since AddPeer
	Factor float64       // latency multiplier, > 0
}

// Outage is a scheduled disconnection.
type Outage struct {
	At  time.Duration // since AddPeer, >= 0
	For time.Duration // how long until the peer reconnects; 0 means never
}

// RandomOutages makes a peer flap at random moments.
type RandomOutages struct {
	MeanUp   time.Duration // mean time connected before each disconnection, > 0
	MeanDown time.Duration // mean time disconnected before each reconnection, > 0
}

// DefaultLateBy is the extra delay of a Late response when Profile.LateBy is
// zero: longer than any sane request timeout.
const DefaultLateBy = 10 * time.Minute

// ErrBadProfile is returned by AddPeer for a Profile that describes no
// possible behaviour (a probability outside [0, 1], unsorted steps, ...).
var ErrBadProfile = errors.New("simnet: bad profile")

// validate checks p and returns an error wrapping ErrBadProfile that names
// the first problem.
func (p *Profile) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadProfile, fmt.Sprintf(format, args...))
	}
	if err := p.Latency.validate(); err != nil {
		return bad("%v", err)
	}
	if !isProbability(p.Loss) {
		return bad("loss %v outside [0, 1]", p.Loss)
	}
	if !isProbability(p.Missing) {
		return bad("missing %v outside [0, 1]", p.Missing)
	}
	if err := p.Service.validate(); err != nil {
		return bad("%v", err)
	}
	if p.Bandwidth < 0 {
		return bad("negative bandwidth %d", p.Bandwidth)
	}
	for i, s := range p.Slowness {
		if !(s.Factor > 0) || math.IsInf(s.Factor, 0) {
			return bad("slowness step %d has factor %v", i, s.Factor)
		}
		if s.At < 0 || (i > 0 && s.At <= p.Slowness[i-1].At) {
			return bad("slowness step %d at %v is out of order", i, s.At)
		}
	}
	end := time.Duration(0)
	for i, o := range p.Outages {
		if o.At < end || o.For < 0 {
			return bad("outage %d (%v for %v) overlaps or is out of order", i, o.At, o.For)
		}
		if o.For == 0 && i != len(p.Outages)-1 {
			return bad("outage %d lasts forever but is not the last", i)
		}
		end = o.At + o.For
	}
	if r := p.RandomOutages; r != nil {
		if len(p.Outages) > 0 {
			return bad("both scheduled and random outages")
		}
		if r.MeanUp <= 0 || r.MeanDown <= 0 {
			return bad("random outages need positive means, got up %v down %v", r.MeanUp, r.MeanDown)
		}
	}
	sum := 0.0
	for f, rate := range p.Faults {
		if !isProbability(rate) {
			return bad("fault %v rate %v outside [0, 1]", Fault(f), rate)
		}
		sum += rate
	}
	if sum > 1+1e-9 {
		return bad("fault rates add up to %v, above 1", sum)
	}
	if p.LateBy < 0 {
		return bad("negative LateBy %v", p.LateBy)
	}
	return nil
}

func isProbability(x float64) bool { return x >= 0 && x <= 1 }

// Validate returns an error wrapping ErrBadProfile if p describes no possible
// behaviour, naming the first problem; AddPeer makes the same check. Other
// transports that borrow Profile's vocabulary (package tcpnet) use it to
// check theirs.
func (p Profile) Validate() error { return p.validate() }

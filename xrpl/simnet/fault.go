package simnet

import "fmt"

// Fault is a way a peer can misbehave when answering a request.
type Fault uint8

// The faults. Each is chosen per request with its probability in
// Profile.Faults.
const (
	// WrongID answers under another request's ID: the most recent earlier
	// request this peer was sent (or, for the peer's first request, the ID
	// after the real one). The real request gets no answer.
	WrongID Fault = iota
	// Duplicate answers twice: once normally and again after a second,
	// independent latency draw.
	Duplicate
	// Late answers after the normal delay plus Profile.LateBy.
	Late
	// UnknownID answers under an ID with its top bit set, which a scheduler
	// counting up from 1 never issues. The real request gets no answer.
	UnknownID
	// WrongType answers with a message of the wrong type: the request itself
	// (a ledger.GetObjects) instead of a ledger.Objects.
	WrongType
	// Ignore never answers, though the request was received.
	Ignore
	// Corrupt answers with one present object's bytes altered (a copy; the
	// ledger is untouched), so it fails ledger.Verify. If no object is
	// present the answer goes out unaltered and is not counted.
	Corrupt

	// NumFaults is the number of faults, for sizing FaultRates and counts.
	NumFaults = iota
)

// FaultRates holds a probability per Fault, indexed by the Fault:
//
//	simnet.FaultRates{simnet.Late: 0.05, simnet.Duplicate: 0.01}
type FaultRates [NumFaults]float64

// FaultCounts holds a count per Fault, indexed by the Fault.
type FaultCounts [NumFaults]int

func (f Fault) String() string {
	switch f {
	case WrongID:
		return "wrong-id"
	case Duplicate:
		return "duplicate"
	case Late:
		return "late"
	case UnknownID:
		return "unknown-id"
	case WrongType:
		return "wrong-type"
	case Ignore:
		return "ignore"
	case Corrupt:
		return "corrupt"
	}
	return fmt.Sprintf("Fault(%d)", uint8(f))
}

// pick maps a uniform draw u in [0, 1) to the fault it selects, or false for
// an honest answer. Faults own consecutive slices of [0, 1) in Fault order.
func (r *FaultRates) pick(u float64) (Fault, bool) {
	for f, rate := range r {
		if u < rate {
			return Fault(f), true
		}
		u -= rate
	}
	return 0, false
}

package resource

// Fee is a charge in rippled's resource units.
type Fee int64

// The fees a rippled peer charges, by what the message costs it.
const (
	// FeeTrivial is an ordinary message.
	FeeTrivial Fee = 1
	// FeeQuery is a moderate burden: a TMGetObjectByHash query, or a ping.
	FeeQuery Fee = 250
	// FeeHeavy is a heavy burden, such as a fetch pack.
	FeeHeavy Fee = 2000
	// FeeMalformed is a malformed request.
	FeeMalformed Fee = 200
	// FeeInvalidData is data that fails validation.
	FeeInvalidData Fee = 400
	// FeeUselessData is data the peer did not ask for: an unsolicited reply.
	FeeUselessData Fee = 150
	// FeeUnsatisfiable is a request the peer cannot satisfy.
	FeeUnsatisfiable Fee = 10
	// FeeDrop is charged when a connection is cut for its charges, and
	// again for each connection refused while the balance stays at or
	// over DropThreshold.
	FeeDrop Fee = 6000
)

// The thresholds on a balance, and the decay window in seconds.
const (
	WarningThreshold = 5000
	DropThreshold    = 25000
	DecayWindow      = 32
)

// Disposition is what a balance calls for.
type Disposition int

const (
	// OK: below the warning.
	OK Disposition = iota
	// Warn: at or over WarningThreshold, below DropThreshold.
	Warn
	// Drop: at or over DropThreshold; the connection is cut.
	Drop
)

// String names the disposition.
func (d Disposition) String() string {
	switch d {
	case OK:
		return "ok"
	case Warn:
		return "warn"
	case Drop:
		return "drop"
	}
	return "Disposition(?)"
}

// DispositionOf returns what balance calls for.
func DispositionOf(balance int64) Disposition {
	switch {
	case balance >= DropThreshold:
		return Drop
	case balance >= WarningThreshold:
		return Warn
	}
	return OK
}

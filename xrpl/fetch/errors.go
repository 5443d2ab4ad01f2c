package fetch

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

var (
	// ErrIncomplete is wrapped by every *IncompleteError.
	ErrIncomplete = errors.New("fetch: incomplete")
	// ErrStalled is the Cause of an IncompleteError when no object verified
	// for Config.StallTimeout.
	ErrStalled = errors.New("no object verified")
)

// IncompleteError is the error of a fetch that ended without every object.
// errors.Is matches it with ErrIncomplete and with its Cause.
type IncompleteError struct {
	Verified int // objects that arrived and verified
	Known    int // hashes discovered so far (Verified of them done)
	Expected int // Config.Expected less the nodes resumed from Config.Store; 0 if unknown
	Peers    int // peers connected when the fetch ended
	// Cause is why it ended: the context's error, an error wrapping
	// ErrStalled or ErrGaveUp (the Rippled strategy), scheduler.ErrStopped,
	// an error wrapping the scheduler's refusal of the fetch's sender (say,
	// Config.Bytes above the budget's ByteBurst), a failed Write to
	// Config.Store, or a broken ledger.
	Cause error
	// Since counts what went wrong after the last object verified.
	Since Trouble
	// Useless names the peers judged useless, as Report.Useless does.
	Useless []UselessPeer
	// Lacking names the peers that lacked every object asked of them, as
	// Report.Lacking does.
	Lacking []LackingPeer
}

// Trouble counts failures over part of a fetch.
type Trouble struct {
	Timeouts, Refused, Disconnects, BadResponses, SendErrors, Missing, Corrupt int
}

// Missing returns how many objects did not arrive: against Expected if it is
// known, else against the hashes discovered (a lower bound).
func (e *IncompleteError) Missing() int {
	if e.Expected > 0 {
		return max(e.Expected-e.Verified, 0)
	}
	return e.Known - e.Verified
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	if e.Expected > 0 {
		fmt.Fprintf(&b, "fetch incomplete: %d of %d objects missing", e.Missing(), e.Expected)
	} else {
		fmt.Fprintf(&b, "fetch incomplete: at least %d objects missing", e.Missing())
	}
	fmt.Fprintf(&b, " (%d verified, %d discovered): %v", e.Verified, e.Known, e.Cause)
	if e.Peers == 0 {
		b.WriteString("; no peer is connected")
	} else {
		fmt.Fprintf(&b, "; %d peers connected", e.Peers)
	}
	if s := e.Since.String(); s != "" {
		fmt.Fprintf(&b, "; since the last verified object: %s", s)
	}
	for i, u := range e.Useless {
		if i == 0 {
			b.WriteString("; disconnected as useless: ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", u.ID, u.Reason)
	}
	for i, p := range e.Lacking {
		if i == 0 {
			b.WriteString("; benched, with none of the ledger: ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s (%s)", p.ID, p.Reason())
	}
	return b.String()
}

func (e *IncompleteError) Unwrap() []error { return []error{ErrIncomplete, e.Cause} }

// String lists the nonzero counts, or returns "" if all are zero.
func (t Trouble) String() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(t.Timeouts, "requests timed out")
	add(t.Refused, "requests refused")
	add(t.Disconnects, "requests failed by disconnection")
	add(t.BadResponses, "answers of the wrong type")
	add(t.SendErrors, "sends refused")
	add(t.Missing, "objects missing from answers")
	add(t.Corrupt, "objects corrupt")
	return strings.Join(parts, ", ")
}

// incompleteLocked describes the fetch's end, caused by cause, with peers
// connected.
func (s *state) incompleteLocked(cause error, peers int) *IncompleteError {
	t, a := s.tally, &s.atLast
	return &IncompleteError{
		Verified: s.front.verified,
		Known:    s.front.known(),
		Expected: s.expectedLocked(),
		Peers:    peers,
		Cause:    cause,
		Useless:  slices.Clone(s.verdicts.useless),
		Lacking:  s.lackingLocked(),
		Since: Trouble{
			Timeouts:     t.timeouts - a.timeouts,
			Refused:      t.refused - a.refused,
			Disconnects:  t.disconnects - a.disconnects,
			BadResponses: t.badResponses - a.badResponses,
			SendErrors:   t.sendErrors - a.sendErrors,
			Missing:      t.missing - a.missing,
			Corrupt:      t.corrupt - a.corrupt,
		},
	}
}

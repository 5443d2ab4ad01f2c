package timeouts

import (
	"time"

	"github.com/peersched/peersched/peer"
)

// Policy gives each request its deadlines and learns from how requests end.
// A sender asks Deadlines when it sends to a peer and passes both to the
// scheduler (offer.Offer.RequestSoft), or to a hedge.Hedger, which hedges
// the request at the soft one (RequestSoft needs soft < hard: where
// Deadlines gives them equal, send with the hard deadline alone, as the
// Hedger does).
//
// The sender reports every response it accepts with Observe, and every
// request that reached its hard deadline with Expired. Nothing else is a
// response time: a refusal, a disconnect or an answer of the wrong kind is
// reported to neither.
//
// The implementations in this package are safe for concurrent use.
type Policy interface {
	// Deadlines returns how long a request sent now to p may wait before it
	// counts as slow (soft) and before it fails (hard), with
	// 0 < soft <= hard.
	Deadlines(p peer.ID) (soft, hard time.Duration)
	// Observe records that p answered a request after rtt.
	Observe(p peer.ID, rtt time.Duration)
	// Expired records that a request to p reached its hard deadline
	// unanswered.
	Expired(p peer.ID)
}

// Fixed is the Policy of fixed deadlines: every request gets Soft and Hard,
// whatever was measured. Hard must be above zero (the scheduler refuses a
// timeout that is not). A Soft of zero, or above Hard, means Hard: a
// request is never slow before it fails. It is safe for concurrent use.
type Fixed struct {
	Soft, Hard time.Duration
}

// Deadlines returns f's deadlines, the same for every peer.
func (f Fixed) Deadlines(peer.ID) (soft, hard time.Duration) {
	if f.Soft <= 0 || f.Soft > f.Hard {
		return f.Hard, f.Hard
	}
	return f.Soft, f.Hard
}

// Observe does nothing: f learns nothing.
func (Fixed) Observe(peer.ID, time.Duration) {}

// Expired does nothing: f learns nothing.
func (Fixed) Expired(peer.ID) {}

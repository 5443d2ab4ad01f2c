package hedge

import (
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Receiver is a receiver.Receiver that takes part in the hedging of its
// requests: a Hedger looks for it on the receiver passed to Request. A
// plain receiver.Receiver has every slow request hedged as the budget
// allows, and hears only of the one outcome.
//
// Both methods run as the scheduler's callbacks do (never concurrently
// with each other or with the receiver's other calls, and never under a
// lock of the Hedger's or the scheduler's), so they may call the Hedger
// and the scheduler. Both get the call's CallID, the one Send returned.
type Receiver interface {
	receiver.Receiver
	// WantHedge is asked when call id's first request, sent to peer from, passes its
	// soft deadline unanswered, before the budget is. True hedges it now,
	// if the budget allows; false leaves it as it is, and the receiver may
	// hedge it later with Hedger.Hedge. It is asked at most once per
	// request.
	WantHedge(id CallID, from peer.ID) bool
	// OnHedge is called when the hedge of call id has been sent, to
	// peer to: from then on the answer may come from either peer.
	OnHedge(id CallID, to peer.ID)
}

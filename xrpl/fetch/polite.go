package fetch

import (
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/xrpl/resource"
)

// The rate a fetch keeps each rippled peer to (see RippledRate).
const (
	// PoliteQueriesPerSecond is the sustained rate of queries: a rippled
	// peer's balance settles at about 250 units for each query a second,
	// and it warns at 5,000, that is at 20 queries a second; 16 settle at
	// about 4,000, a fifth below.
	PoliteQueriesPerSecond = 16
	// PoliteBurst is how many queries may go at once after a quiet spell:
	// 64, four seconds' worth. A rippled peer's balance is kept for the
	// address, so a connection that drops and redials at once finds it
	// where it was, about 4,000 after a steady 16 a second, while the
	// scheduler's bucket for the new connection is full: the worst a greedy
	// sender can then do peaks at about 4,370, 13% below the warning (a
	// burst of 128 would reach 4,870, within 3%). Without a redial, steady,
	// pausing and resuming with the bucket full, it peaks at about 4,030
	// (TestRippledRate).
	PoliteBurst = 64
)

// RippledRate is what the fetch's peers are assumed to accept, in rippled's
// own units (package resource): each request, a TMGetObjectByHash query,
// costs resource.FeeQuery (250), at PoliteQueriesPerSecond sustained after
// a burst of PoliteBurst, a margin below the balance at which a rippled
// peer warns (resource.WarningThreshold, 5,000: 20 queries a second). A
// host connects each peer with peer.Options{Rate: RippledRate}; the
// scheduler then never sends a peer more than that, and senders wait.
var RippledRate = limit.Rate{
	Cost:      int64(resource.FeeQuery),
	PerSecond: PoliteQueriesPerSecond * int64(resource.FeeQuery),
	Burst:     PoliteBurst * int64(resource.FeeQuery),
}

package hedge

// Stats counts what a Hedger did. Counters only grow.
type Stats struct {
	// Requests is how many requests Request and Send sent.
	Requests uint64
	// Slow is how many of them passed their soft deadline unanswered.
	Slow uint64
	// Hedges is how many hedges were sent: the extra requests.
	Hedges uint64
	// Denied is how many times the budget refused a hedge.
	Denied uint64
	// Unqueued is how many hedges the scheduler refused to queue (see
	// Options.Sender).
	Unqueued uint64
	// HedgeWins is how many requests were answered first through their
	// hedge.
	HedgeWins uint64
	// Live is how many requests are live now: sent, not yet ended for
	// their receiver, and not withdrawn.
	Live int
	// Waiting is how many hedges wait now in the scheduler's queue for a
	// channel of another peer.
	Waiting int
	// Tokens is how many hedges the budget would allow now.
	Tokens int
}

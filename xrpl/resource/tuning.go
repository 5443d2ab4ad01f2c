package resource

// What a rippled peer does when it is busy or asked too much at once,
// beyond its accounts: limits of its overlay, not of its balances, which
// every peer this application runs applies with its accounts.
const (
	// DropSendQueue is the length of a peer's send queue (replies queued
	// and not yet written) at which it drops a TMGetObjectByHash query
	// without answering: the sender sees only a missing reply. rippled
	// charges such a query only the trivial fee, since it never handles it.
	DropSendQueue = 192
	// MaxReplyObjects is the most objects one reply carries; a query for
	// more is answered with the first MaxReplyObjects objects found, the
	// rest left out as objects the peer lacks are.
	MaxReplyObjects = 12288
)

// Busy reports whether a peer whose send queue holds queued messages drops
// the query that arrives now.
func Busy(queued int) bool { return queued >= DropSendQueue }

// Truncate returns the first MaxReplyObjects of a reply's n objects: how
// many a peer sends, and how many it leaves out.
func Truncate(n int) (kept, cut int) {
	if n <= MaxReplyObjects {
		return n, 0
	}
	return MaxReplyObjects, n - MaxReplyObjects
}

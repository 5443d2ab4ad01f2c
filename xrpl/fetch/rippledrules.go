package fetch

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
)

// The numbers of rippled's ledger acquisition (InboundLedger.cpp and
// PeerImp::getScore), the defaults of RippledConfig.
const (
	rippledStart       = 5               // peers the set starts with
	rippledAdd         = 3               // peers added after an interval without progress
	rippledInterval    = 3 * time.Second // the acquisition's timer
	rippledMaxTimeouts = 6               // it gives up at the interval without progress past this many
	rippledBlind       = 12              // hashes in a request sent blind
	rippledReply       = 128             // hashes in a request sent in reaction to a reply
	// rippledWindow is how many missing nodes rippled looks at each time
	// it builds a request; it leaves out those asked since the last tick,
	// so at most this many hashes are asked per interval beyond those
	// answered, however many peers reply.
	rippledWindow = 256

	// rippled's peer score: a random part, a bonus for a peer that says it
	// has the ledger, and a penalty per millisecond of its latency, or a
	// fixed one where the latency is unknown.
	scoreRandomMax = 9999
	scoreHaveItem  = 10000
	scorePerMs     = 30
	scoreNoLatency = 8000
)

// RippledConfig sets the Rippled strategy's numbers. The zero value is
// rippled's own; tests shrink them.
type RippledConfig struct {
	// Start is how many peers the set starts with (and takes when none of
	// its peers is connected). 0 means rippled's 5.
	Start int
	// Add is how many peers an interval without progress adds. 0 means
	// rippled's 3.
	Add int
	// Interval is the acquisition's timer. 0 means rippled's 3s.
	Interval time.Duration
	// MaxTimeouts is how many intervals without progress the fetch
	// tolerates, over the whole fetch: it gives up at the tick that finds
	// one more (with an *IncompleteError caused by ErrGaveUp), as rippled
	// abandons the acquisition. 0 means rippled's 6; a negative value never
	// gives up.
	MaxTimeouts int
	// Blind is the most hashes a request sent blind asks for: to a peer
	// added to the set, or to every peer of the set after an interval
	// without progress. 0 means rippled's 12.
	Blind int
	// Reply is the most hashes a request sent in reaction to a useful
	// reply asks for. 0 means rippled's 128.
	Reply int
	// Window is how many hashes may be asked, in all, between two ticks
	// (less those that verified), outside the blind requests at a tick
	// without progress: rippled looks at this many missing nodes each time
	// and leaves out the ones asked since the last tick. 0 means rippled's
	// 256.
	Window int
	// Seed draws the random part of each peer's score.
	Seed uint64
	// HasLedger, if set, says whether a peer says it holds the ledger
	// (rippled learns it from the peer's status messages), which raises
	// its score. Without it no peer does. It is called with the fetch's
	// lock held, and must not call back into it.
	HasLedger func(peer.ID) bool
}

// withDefaults returns c with its zero fields filled in, or an error
// wrapping ErrBadConfig.
func (c RippledConfig) withDefaults() (RippledConfig, error) {
	if c.Start < 0 || c.Add < 0 || c.Interval < 0 || c.Blind < 0 || c.Reply < 0 || c.Window < 0 ||
		c.Blind > MaxBatch || c.Reply > MaxBatch {
		return c, fmt.Errorf("%w: rippled start %d, add %d, interval %v, blind %d, reply %d (max %d), window %d",
			ErrBadConfig, c.Start, c.Add, c.Interval, c.Blind, c.Reply, MaxBatch, c.Window)
	}
	if c.Start == 0 {
		c.Start = rippledStart
	}
	if c.Add == 0 {
		c.Add = rippledAdd
	}
	if c.Interval == 0 {
		c.Interval = rippledInterval
	}
	if c.MaxTimeouts == 0 {
		c.MaxTimeouts = rippledMaxTimeouts
	}
	if c.Blind == 0 {
		c.Blind = rippledBlind
	}
	if c.Reply == 0 {
		c.Reply = rippledReply
	}
	if c.Window == 0 {
		c.Window = rippledWindow
	}
	return c, nil
}

// trigger is why rippled sends a peer a request.
type trigger uint8

const (
	triggerAdded   trigger = iota + 1 // the peer has just joined the set
	triggerTimeout                    // an interval passed without progress
	triggerReply                      // the peer's reply brought something useful
)

// peerScore is rippled's score of a peer (PeerImp::getScore): random, drawn
// in [0, scoreRandomMax], plus scoreHaveItem if the peer has the ledger,
// less scorePerMs for each whole millisecond of its latency, or
// scoreNoLatency if its latency is unknown (latency <= 0). The set takes
// the highest scores first. At the latencies of a LAN or a continent (up
// to about 300ms) the random part outweighs the latency.
func peerScore(random int, haveItem bool, latency time.Duration) int {
	score := random
	if haveItem {
		score += scoreHaveItem
	}
	if latency > 0 {
		score -= int(latency/time.Millisecond) * scorePerMs
	} else {
		score -= scoreNoLatency
	}
	return score
}

// peersToAdd is how many peers the set takes now: c.Start when none of its
// peers is connected (at the start, or when all have gone), else c.Add.
func peersToAdd(connectedInSet int, c RippledConfig) int {
	if connectedInSet == 0 {
		return c.Start
	}
	return c.Add
}

// askSize is how many hashes a request sent for reason may ask for, given
// recent, the hashes asked since the last tick that have not verified: a
// reply asks for up to c.Reply and a peer just added for up to c.Blind,
// both within what the window leaves; a request after an interval without
// progress asks for up to c.Blind whatever the window (rippled then asks
// again even for what it asked recently). Never negative.
func askSize(reason trigger, recent int, c RippledConfig) int {
	left := max(c.Window-recent, 0)
	switch reason {
	case triggerReply:
		return min(c.Reply, left)
	case triggerAdded:
		return min(c.Blind, left)
	}
	return c.Blind
}

// tickVerdict is what the acquisition's timer decides.
type tickVerdict uint8

const (
	tickWait   tickVerdict = iota + 1 // progress: nothing to do
	tickWiden                         // no progress: ask every peer of the set blind, and add peers
	tickGiveUp                        // too many intervals without progress
)

// onTick is rippled's timer (TimeoutCounter::invokeOnTimer, then
// InboundLedger::onTimer): an interval without progress counts one more
// timeout, over the whole fetch (progress never resets the count); past
// maxTimeouts the acquisition gives up (never, if maxTimeouts < 0);
// otherwise an interval without progress widens the set. It returns the
// new count and the verdict.
func onTick(progressed bool, timeouts, maxTimeouts int) (int, tickVerdict) {
	if !progressed {
		timeouts++
	}
	switch {
	case maxTimeouts >= 0 && timeouts > maxTimeouts:
		return timeouts, tickGiveUp
	case !progressed:
		return timeouts, tickWiden
	}
	return timeouts, tickWait
}

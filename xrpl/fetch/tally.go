package fetch

import (
	"math"
	"slices"
	"time"

	"github.com/peersched/peersched/peer"
)

// tally counts what happened during a fetch, overall and per peer. Like the
// frontier it is plain data, guarded by the strategy that owns it.
type tally struct {
	requests     int // sent (the host accepted them)
	answered     int // ended with a response of any content
	timeouts     int
	refused      int // refused by their peer (receiver.Refused)
	disconnects  int // failed because their peer disconnected
	badResponses int // answered with something other than ledger.Objects
	sendErrors   int // the host refused the send
	retries      int // hashes put back to be asked again
	hashes       int // hashes asked for, in the batches counted next
	batches      int // requests sent with a batch of hashes (hedges are copies: not counted)
	hedges       int // requests sent again to another peer at the tail
	missing      int // objects left out of answers
	corrupt      int // objects whose bytes did not verify
	bytes        int64
	reused       int   // nodes taken from the base instead of fetched
	reusedBytes  int64 // their bytes
	inFlight     int   // requests
	busyPeers    int   // peers with requests in flight

	peers map[peer.ID]*peerTally
	mark  uint64 // the last stamp given to peerTally.mark
}

// peerTally is one peer's share of the tally.
type peerTally struct {
	requests   int
	answered   int
	failures   int // timeouts, refusals, disconnects, wrong-type answers
	badObjects int // missing or corrupt objects in its answers
	objects    int // objects it delivered that verified
	inFlight   int
	rtts       []time.Duration // response times of answered requests
	// streak counts its requests in a row that failed (timed out, answered
	// with the wrong type or with nothing usable); an answer that delivers
	// an object resets it. Disconnections do not count: they say nothing
	// about how the peer answers; nor do refusals, which say it is busy.
	streak int
	mark   uint64 // scratch: a stamp of tally.mark, to count a peer once in a walk
	listed int    // scratch: its channels met so far in a walk stamped mark
}

// suspectStreak is the failure streak from which a peer is suspect: the
// scheduler strategy then keeps at most one request in flight to it, a probe
// for a single hash, until it delivers again. Three in a row is rare for an honest peer
// (even with 20% loss it is under 1%) and caps what a silent or lying peer
// costs at one hash held up for one timeout at a time.
const suspectStreak = 3

// suspect reports whether the peer is suspect and already has its probe out.
func (p *peerTally) suspect() bool {
	return p.streak >= suspectStreak && p.inFlight > 0
}

func newTally() *tally { return &tally{peers: make(map[peer.ID]*peerTally)} }

func (t *tally) peer(id peer.ID) *peerTally {
	p := t.peers[id]
	if p == nil {
		p = &peerTally{}
		t.peers[id] = p
	}
	return p
}

// sent counts a request the host accepted.
func (t *tally) sent(to peer.ID) {
	p := t.peer(to)
	t.requests++
	t.inFlight++
	p.requests++
	if p.inFlight == 0 {
		t.busyPeers++
	}
	p.inFlight++
}

// ended counts the end of a request sent to from.
func (t *tally) ended(from peer.ID) *peerTally {
	p := t.peer(from)
	t.inFlight--
	p.inFlight--
	if p.inFlight == 0 {
		t.busyPeers--
	}
	return p
}

// observe records one response time of the peer's, for the report.
func (p *peerTally) observe(rtt time.Duration) {
	p.rtts = append(p.rtts, rtt)
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest sample with at least p% of the samples
// at or below it. It returns 0 for no samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(float64(len(sorted)) * p / 100))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// meanOf returns the mean of ds, or 0 for none.
func meanOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// sortedCopy returns ds sorted, leaving ds as it was.
func sortedCopy(ds []time.Duration) []time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s
}

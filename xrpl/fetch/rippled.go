package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
	"github.com/peersched/peersched/xrpl/ledger"
)

// ErrGaveUp is the Cause of the IncompleteError of a Rippled fetch that
// gave up: more intervals without progress than RippledConfig.MaxTimeouts.
var ErrGaveUp = errors.New("gave up after too many intervals without progress")

// ErrRippledStopped is returned by a Rippled's Deliver and Refuse once its
// Run has returned.
var ErrRippledStopped = errors.New("fetch: rippled fetch has ended")

// Rippled fetches a ledger the way rippled acquires one (InboundLedger
// through its PeerSet), over the one query this wire has, a request for
// objects by hash (TMGetObjectByHash), as rippled's by-hash fallback asks:
//
//   - Its set starts with the RippledConfig.Start (5) connected peers of
//     the highest score (see peerScore: a random part drawn from
//     RippledConfig.Seed, a bonus for a peer that says it has the ledger,
//     and a penalty for its latency, here the mean response time the fetch
//     has measured, unknown before it has asked the peer). Each is asked
//     for the same first hashes, up to RippledConfig.Blind (12): the root,
//     as rippled asks each peer it adds for the ledger's header, whose
//     answer carries the root of the state. A peer never leaves the set;
//     one that disconnects is skipped while it is away.
//   - A reply that brings at least one object that verifies is progress,
//     and is answered at once with a request to the same peer for up to
//     RippledConfig.Reply (128) hashes. A reply that brings nothing new (a
//     duplicate, or only missing objects) is not followed up: its peer
//     waits for the timer. No peer of the set has more than one request
//     out at a time.
//   - No more than RippledConfig.Window (256) hashes are asked between
//     two ticks of the timer, less those that verified: rippled looks at
//     that many missing nodes each time and leaves out the ones it asked
//     since the last tick.
//   - Every RippledConfig.Interval (3s) the timer ticks. A request out for
//     a whole interval is given up (counted in Report.Timeouts), its hashes
//     to be asked again. If the interval brought no progress, every peer of
//     the set without a request out is sent one blind request, the same
//     hashes for all (up to 12, even if asked recently), and then
//     RippledConfig.Add (3) more peers join the set (RippledConfig.Start
//     if no peer of the set is connected), each sent a blind request of
//     its own (or the shared one, if nothing has verified yet). Past
//     RippledConfig.MaxTimeouts (6) intervals without progress over the
//     whole fetch, it gives up, as rippled does: Run ends with an
//     *IncompleteError caused by ErrGaveUp, and what verified is kept (in
//     Config.Store). A caller that wants rippled's next attempt calls Run
//     on a new Rippled with the same Store, which resumes.
//
// It differs from rippled where this wire or this package's bookkeeping
// does. In rippled's favour: it has no header to fetch first; an object an
// answer lacks is asked again at once, of another peer where it can be,
// where rippled waits for the next tick; and each reply is handled on its
// own, so every useful reply is followed up, where rippled follows up at
// most 6 of the replies it handles together, and only those that brought
// at least half as much as the best. Against it: outside the shared blind
// requests a hash is asked of one peer at a time, where rippled, after a
// tick, may ask again what is still out; and a peer with a request out is
// sent no second one at a tick, where rippled would send it.
//
// It keeps no more than one request per peer in flight whatever channels
// the transport gives the peer, arms its own timer, numbers its own
// requests, and does not use the scheduler. Config.Batch, Timeout,
// MinTimeout, HedgesPerThousand, Priority and SetSize do not apply; the
// fetch's judge (Config.Penalty) names and disconnects lying peers, and
// benches nobody: a peer whose answers lack what it is asked for only goes
// without a follow-up, as in rippled.
//
// A Rippled is a Host (and a Refuser: a refused request fails at once and
// its peer waits for the timer). It is safe for concurrent use; like the
// Peerset it calls Peer.Send with its lock held, so a peer's Send must not
// call back into it. Create one with NewRippled; it fetches once.
type Rippled struct {
	*state
	rc RippledConfig

	// The following fields are guarded by mu.
	running    bool
	conns      map[peer.ID]peer.Peer // connected peers
	set        []peer.ID             // the fetch's peers, in the order they joined
	inSet      map[peer.ID]bool
	rng        *rand.Rand // the random part of the scores
	lastID     uint64
	pending    map[uint64]*psRequest
	ended      map[uint64]bool // request IDs that ended: true if answered, false if given up
	dropped    Dropped
	recent     map[ledger.Hash]struct{} // asked since the last tick, not verified
	held       map[ledger.Hash]int      // how many requests out ask for each hash (several: a shared blind request)
	progressed bool                     // an object verified since the last tick
	timeouts   int                      // ticks without progress, over the whole fetch
	timer      *clock.Timer
}

// NewRippled returns a Rippled that will fetch the ledger cfg names when
// Run is called, with rippled's numbers as rc sets them. It fails with an
// error wrapping ErrBadConfig.
func NewRippled(cfg Config, rc RippledConfig) (*Rippled, error) {
	rc, err := rc.withDefaults()
	if err != nil {
		return nil, err
	}
	// The report's bound counts each request at its largest.
	cfg.Batch = max(rc.Reply, rc.Blind)
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Rippled{
		state:   newState(cfg),
		rc:      rc,
		conns:   make(map[peer.ID]peer.Peer),
		inSet:   make(map[peer.ID]bool),
		rng:     rand.New(rand.NewPCG(rc.Seed, 0x726970706c6564)), // "rippled"
		pending: make(map[uint64]*psRequest),
		ended:   make(map[uint64]bool),
		recent:  make(map[ledger.Hash]struct{}),
		held:    make(map[ledger.Hash]int),
	}, nil
}

// Connect makes p available. It joins the set only when the set next
// grows. It fails, changing nothing, with peer.ErrNilPeer,
// peer.ErrBadChannels or peer.ErrAlreadyConnected; channels is otherwise
// ignored (one request at a time).
func (r *Rippled) Connect(p peer.Peer, channels int) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	if channels < 1 {
		return peer.ErrBadChannels
	}
	id := p.ID()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.conns[id]; ok {
		return fmt.Errorf("connect %q: %w", id, peer.ErrAlreadyConnected)
	}
	r.conns[id] = p
	return nil
}

// Disconnect forgets the connection of the peer named id. Its request in
// flight, if any, is given up at a tick, as any other without an answer.
// It fails with peer.ErrUnknownPeer.
func (r *Rippled) Disconnect(id peer.ID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.conns[id]; !ok {
		return fmt.Errorf("disconnect %q: %w", id, peer.ErrUnknownPeer)
	}
	delete(r.conns, id)
	return nil
}

// Deliver hands the Rippled a response that the peer named from sent under
// request id, with the Peerset's checks and errors (ErrRippledStopped once
// Run has returned). A response that brings an object that verifies is
// progress, and its peer is sent the next request at once.
func (r *Rippled) Deliver(from peer.ID, id peer.RequestID, response any) error {
	r.mu.Lock()
	req, err := r.claimLocked(from, id)
	r.mu.Unlock()
	if err != nil {
		return err
	}
	now := r.cfg.Clock.Now()
	results, valid := examine(req.hashes, response, make([]itemResult, 0, len(req.hashes)))
	reuse(r.cfg.Base, results)
	r.waitToApply()

	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return nil
	}
	before := r.front.verified
	asked := req.hashes
	if valid {
		asked, results = r.unsharedResultsLocked(asked, results)
	} else {
		asked = r.unsharedLocked(asked)
	}
	r.releaseLocked(req.hashes)
	r.answeredLocked(asked, from, results, valid, now.Sub(req.sentAt), now)
	if valid {
		for i := range results {
			if results[i].kind == itemOK {
				delete(r.recent, results[i].hash)
			}
		}
	}
	if r.front.verified > before {
		r.progressed = true
		r.triggerLocked(from, triggerReply)
	}
	useless := r.takeDisconnectsLocked()
	r.mu.Unlock()
	r.disconnect(useless)
	return nil
}

// Refuse tells the Rippled that the peer named from refused request id
// (see Refuser), checked as Deliver checks a response. The request fails
// at once, its hashes to be asked again; the peer waits for the timer.
func (r *Rippled) Refuse(from peer.ID, id peer.RequestID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	req, err := r.claimLocked(from, id)
	if err != nil {
		return err
	}
	r.failRequestLocked(req, failRefused)
	return nil
}

// failRequestLocked applies the failure of req: its hashes go back to be asked
// again, but those another request out still asks for (see
// unsharedLocked).
func (r *Rippled) failRequestLocked(req *psRequest, why failKind) {
	hashes := r.unsharedLocked(req.hashes)
	r.releaseLocked(req.hashes)
	r.failedLocked(hashes, req.to, why)
}

// unsharedLocked returns the hashes of a request that no other request out
// asks for: a shared blind request's hashes go back to be asked again only
// when the last of its copies fails, since the frontier takes an answer
// only for a hash it counts as asked. It returns hashes itself when none
// is shared.
func (r *Rippled) unsharedLocked(hashes []ledger.Hash) []ledger.Hash {
	var out []ledger.Hash
	for i, h := range hashes {
		if r.held[h] > 1 {
			if out == nil {
				out = append(make([]ledger.Hash, 0, len(hashes)), hashes[:i]...)
			}
			continue
		}
		if out != nil {
			out = append(out, h)
		}
	}
	if out == nil {
		return hashes
	}
	return out
}

// unsharedResultsLocked returns the items of an answer that the fetch
// applies: all but the objects it lacks or sent corrupt whose hash another
// request out still asks for (see unsharedLocked), which go uncounted.
func (r *Rippled) unsharedResultsLocked(asked []ledger.Hash, results []itemResult) ([]ledger.Hash, []itemResult) {
	keep := -1
	for i := range results {
		shared := results[i].kind != itemOK && r.held[asked[i]] > 1
		if shared && keep < 0 {
			keep = i
			asked = slices.Clone(asked)
		}
		if keep >= 0 && !shared {
			asked[keep], results[keep] = asked[i], results[i]
			keep++
		}
	}
	if keep < 0 {
		return asked, results
	}
	return asked[:keep], results[:keep]
}

// releaseLocked counts a request for hashes as no longer out.
func (r *Rippled) releaseLocked(hashes []ledger.Hash) {
	for _, h := range hashes {
		if r.held[h]--; r.held[h] <= 0 {
			delete(r.held, h)
		}
	}
}

// claimLocked takes request id, sent to from, out of the pending requests,
// recording it as answered; or it counts why it cannot and returns the
// error.
func (r *Rippled) claimLocked(from peer.ID, id peer.RequestID) (*psRequest, error) {
	if r.finished {
		return nil, ErrRippledStopped
	}
	req, ok := r.pending[uint64(id)]
	if !ok {
		answered, ended := r.ended[uint64(id)]
		switch {
		case ended && answered:
			r.dropped.Duplicate++
			return nil, receiver.ErrDuplicateResponse
		case ended:
			r.dropped.Late++
			return nil, receiver.ErrLateResponse
		default:
			r.dropped.Unknown++
			return nil, receiver.ErrUnknownRequest
		}
	}
	if req.to != from {
		r.dropped.WrongPeer++
		return nil, receiver.ErrWrongPeer
	}
	delete(r.pending, uint64(id))
	r.ended[uint64(id)] = true
	return req, nil
}

// Run fetches the ledger from the peers connected now and later, and
// returns as Run (the scheduler strategy) does: a Report, and nil or an
// *IncompleteError (caused by ErrGaveUp if it gave up). It may be called
// once.
func (r *Rippled) Run(ctx context.Context) (Report, error) {
	start := r.cfg.Clock.Now()
	r.mu.Lock()
	if r.running || r.finished {
		r.mu.Unlock()
		return Report{}, errors.New("fetch: Rippled.Run called twice")
	}
	r.running = true
	r.beginLocked(start)
	if !r.front.complete() {
		r.askTogetherLocked(r.addPeersLocked())
		r.timer = r.cfg.Clock.AfterFunc(r.rc.Interval, r.tick)
	}
	r.mu.Unlock()

	w := r.watch(ctx, start, r.load)

	r.mu.Lock()
	r.finished = true
	if r.timer != nil {
		r.timer.Stop()
	}
	dropped := r.dropped
	r.mu.Unlock()
	return r.end("rippled", start, w, r.load(), dropped)
}

// load reads the peers: those connected, and as channels the connected
// peers of the set, one request each, and how many of those have one out.
func (r *Rippled) load() hostLoad {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := hostLoad{peers: len(r.conns)}
	for _, id := range r.set {
		if _, up := r.conns[id]; up {
			l.channels++
			if pt := r.tally.peers[id]; pt != nil && pt.inFlight > 0 {
				l.closed++
			}
		}
	}
	return l
}

// tick is the acquisition's timer: it gives up the requests out for a
// whole interval, forgets which hashes were asked recently, and widens the
// set or gives up (onTick) when the interval brought no progress.
func (r *Rippled) tick() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return
	}
	now := r.cfg.Clock.Now()
	for _, id := range slices.Sorted(maps.Keys(r.pending)) { // in order: the retries' order must replay
		req := r.pending[id]
		if now.Sub(req.sentAt) < r.rc.Interval {
			continue
		}
		delete(r.pending, id)
		r.ended[id] = false
		r.failRequestLocked(req, failTimeout)
	}
	clear(r.recent)
	var verdict tickVerdict
	r.timeouts, verdict = onTick(r.progressed, r.timeouts, r.rc.MaxTimeouts)
	r.progressed = false
	switch verdict {
	case tickGiveUp:
		r.failLocked(fmt.Errorf("%w: %d intervals of %v without progress", ErrGaveUp, r.timeouts, r.rc.Interval))
		return
	case tickWiden:
		old := len(r.set)
		added := r.addPeersLocked()
		if r.front.verified == 0 {
			// Still at the start: every peer of the set, new ones too,
			// is asked the first hashes (see askTogetherLocked).
			r.askTogetherLocked(r.set)
			break
		}
		r.askTogetherLocked(r.set[:old])
		for _, id := range added {
			r.triggerLocked(id, triggerAdded)
		}
	}
	r.timer = r.cfg.Clock.AfterFunc(r.rc.Interval, r.tick)
}

// addPeersLocked adds to the set the connected peers not in it with the
// highest scores, as many as peersToAdd says, and returns them.
func (r *Rippled) addPeersLocked() []peer.ID {
	connected := 0
	type scored struct {
		id    peer.ID
		score int
	}
	var candidates []scored
	for _, id := range slices.Sorted(maps.Keys(r.conns)) { // in order: the draws must replay
		if r.inSet[id] {
			connected++
			continue
		}
		var latency time.Duration
		if pt := r.tally.peers[id]; pt != nil {
			latency = meanOf(pt.rtts)
		}
		has := r.rc.HasLedger != nil && r.rc.HasLedger(id)
		candidates = append(candidates, scored{id, peerScore(r.rng.IntN(scoreRandomMax+1), has, latency)})
	}
	slices.SortStableFunc(candidates, func(a, b scored) int { return cmp.Compare(b.score, a.score) })
	n := min(peersToAdd(connected, r.rc), len(candidates))
	added := make([]peer.ID, 0, n)
	for _, c := range candidates[:n] {
		r.inSet[c.id] = true
		r.set = append(r.set, c.id)
		added = append(added, c.id)
	}
	return added
}

// askTogetherLocked sends one blind request, the same hashes for all, to
// each of the peers ids that is connected, has no request out and is not
// judged useless, as rippled sends one message to every peer of its set:
// after an interval without progress, and at the start, where rippled asks
// each peer it adds for the ledger's header, whose answer carries the root
// of the state. The first useful answer takes the hashes, and its peer is
// followed up; the others bring only duplicates.
func (r *Rippled) askTogetherLocked(ids []peer.ID) {
	var to []peer.ID
	for _, id := range ids {
		if r.mayTriggerLocked(id) {
			to = append(to, id)
		}
	}
	if len(to) == 0 {
		return
	}
	n := askSize(triggerTimeout, len(r.recent), r.rc)
	hashes := r.front.takeSized(n, to[0], true)
	if len(hashes) == 0 {
		return
	}
	sent := false
	for _, id := range to {
		if r.sendLocked(id, slices.Clone(hashes)) {
			sent = true
		} else {
			r.tally.sendErrors++
		}
	}
	if !sent {
		r.front.putBack(hashes, to[0])
	}
}

// mayTriggerLocked reports whether the peer named id may be sent a request
// now: it is connected, has no request out (one at a time), and is not
// judged useless.
func (r *Rippled) mayTriggerLocked(id peer.ID) bool {
	if _, up := r.conns[id]; !up || r.finished || r.verdicts.tracker.Useless(id) {
		return false
	}
	pt := r.tally.peers[id]
	return pt == nil || pt.inFlight == 0
}

// sendLocked sends the peer named id a request for hashes, and reports
// whether its connection took it.
func (r *Rippled) sendLocked(id peer.ID, hashes []ledger.Hash) bool {
	r.lastID++
	rid := r.lastID
	if err := r.conns[id].Send(peer.RequestID(rid), ledger.GetObjects{Hashes: hashes}); err != nil {
		return false
	}
	for _, h := range hashes {
		r.recent[h] = struct{}{}
		r.held[h]++
	}
	r.pending[rid] = &psRequest{to: id, hashes: hashes, sentAt: r.cfg.Clock.Now()}
	r.tally.sent(id)
	r.tally.hashes += len(hashes) // the report's BatchMean
	r.tally.batches++
	return true
}

// triggerLocked sends the peer named id a request of its own, for the
// reason given (a useful reply, or its joining the set), if mayTriggerLocked
// allows and there is something to ask that askSize allows.
func (r *Rippled) triggerLocked(id peer.ID, reason trigger) {
	if !r.mayTriggerLocked(id) {
		return
	}
	n := askSize(reason, len(r.recent), r.rc)
	if n == 0 {
		return
	}
	hashes := r.front.takeSized(n, id, false)
	if len(hashes) > 0 && !r.sendLocked(id, hashes) {
		r.sendFailedLocked(hashes, id)
	}
}

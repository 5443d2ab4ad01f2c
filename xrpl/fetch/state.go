package fetch

import (
	"fmt"
	"sync"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/timeouts"
	"github.com/peersched/peersched/xrpl/ledger"
)

// state is the bookkeeping both strategies share: the frontier, the tally,
// and how the fetch ends. Each strategy embeds one and takes mu around every
// use; the methods whose names end in Locked expect it held.
type state struct {
	cfg    Config       // fixed at creation
	writer *storeWriter // writes to cfg.Store; nil without one. Fixed at creation, started by beginLocked.

	mu sync.Mutex
	// The following fields are guarded by mu.
	front        *frontier
	tally        *tally
	timing       timeouts.Policy // every answer's response time; Run's deadlines
	verdicts     verdicts        // what each peer's answers held: benches, useless peers (peerjudge.go)
	lastVerified time.Time       // when an object last verified (or the fetch began)
	atLast       tally           // counters when an object last verified, for the diagnosis
	fatal        error           // why the fetch cannot finish, if it cannot
	finished     bool            // Run is returning: callbacks must change nothing
	doneClosed   bool
	done         chan struct{} // closed when complete or fatal
	resumed      int           // nodes found in cfg.Store when the fetch began
	toWrite      []Node        // an answer's verified nodes, for the writer; reused
}

// failKind says why a request ended without a usable answer.
type failKind uint8

const (
	failTimeout failKind = iota + 1
	failDisconnected
	failRefused // the peer said it would not serve the request (overloaded)
)

func newState(cfg Config) *state {
	s := &state{cfg: cfg, front: newFrontier(), tally: newTally(), timing: newTiming(cfg), verdicts: newVerdicts(cfg), done: make(chan struct{})}
	if cfg.Store != nil {
		s.writer = newWriter(cfg.Store, func(err error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.failLocked(err)
		})
	}
	return s
}

// newTiming returns the policy behind Run's deadlines: RFC 6298's estimate
// of each peer's response time (package timeouts), its hard deadline between
// MinTimeout and Timeout, and Timeout before any peer has answered.
func newTiming(cfg Config) timeouts.Policy {
	e, err := timeouts.NewEstimator(cfg.timing())
	if err != nil {
		// withDefaults has made this very call.
		panic(fmt.Sprintf("fetch: a checked config fails timeouts.NewEstimator: %v", err))
	}
	return e
}

// beginLocked starts the fetch at now with the root as its only known hash,
// or, if the base holds the root, with the nodes under it the base lacks
// (none, usually: then the fetch is complete at once). With a store, it
// resumes from what the store holds instead (see resumeLocked), and starts
// the writer that end stops.
func (s *state) beginLocked(now time.Time) {
	s.lastVerified = now
	if s.cfg.Store != nil {
		s.resumeLocked()
		// The stall is counted from here: reading a large store takes a
		// while, and verifies nothing.
		s.lastVerified = s.cfg.Clock.Now()
		s.writer.start()
		return
	}
	if s.cfg.Base != nil {
		if t, lacking := walkBase(s.cfg.Base, s.cfg.Root); t.nodes > 0 {
			s.reusedLocked(t)
			for _, h := range lacking {
				s.front.discover(h)
			}
			s.checkDoneLocked()
			return
		}
	}
	s.front.discover(s.cfg.Root)
}

// resumeLocked starts the fetch from what its store holds: the tree under
// the root that an earlier fetch kept before it was stopped or killed. The
// nodes held count as resumed and are never asked for; the nodes they name
// and the store lacks (or the base: see resumeWalk) are what is fetched.
// Nothing else is read from the store afterwards: a node the store lacks
// has no descendant there worth reading, since the fetch keeps parents
// before their children. It walks the whole stored tree with the lock
// held, before the fetch has sent anything.
func (s *state) resumeLocked() {
	r := resumeWalk(s.cfg.Store, s.cfg.Base, s.cfg.Root)
	if r.tree.nodes > 0 {
		s.front.reuse()
		s.resumed = r.tree.nodes
	}
	for _, t := range r.reused {
		s.reusedLocked(t)
	}
	for _, h := range r.lacking {
		s.front.discover(h)
	}
	s.checkDoneLocked()
}

// stopWriter writes what the fetch verified and has not written yet, and
// returns the first error the store gave, if any. It is called once, as the
// fetch ends, without the lock.
func (s *state) stopWriter() error {
	if s.writer == nil {
		return nil
	}
	return s.writer.stop()
}

// waitToApply is called before an answer is applied, outside the lock: it
// waits while too many verified nodes wait for the store (see
// storeWriter.waitRoom).
func (s *state) waitToApply() {
	if s.writer != nil {
		s.writer.waitRoom()
	}
}

// expectedLocked returns Config.Expected less the nodes resumed from the
// store: what this run has to download, as its progress, report and error
// count it (0: not given).
func (s *state) expectedLocked() int {
	return max(s.cfg.Expected-s.resumed, 0)
}

// reusedLocked counts a subtree taken from the base.
func (s *state) reusedLocked(t reusedTree) {
	s.front.reuse()
	s.tally.reused += t.nodes
	s.tally.reusedBytes += t.bytes
}

// answeredLocked applies the response to a request for asked, sent to from
// and answered after rtt; results and ok are examine's verdict on it.
func (s *state) answeredLocked(asked []ledger.Hash, from peer.ID, results []itemResult, ok bool, rtt time.Duration, now time.Time) {
	t := s.tally
	p := t.ended(from)
	if !ok {
		t.badResponses++
		p.failures++
		p.streak++
		s.retryLocked(asked, from)
		return
	}
	t.answered++
	p.answered++
	p.observe(rtt)
	s.timing.Observe(from, rtt)
	s.judgeLocked(from, results, now)
	progressed := false
	for i := range results {
		r := &results[i]
		switch r.kind {
		case itemOK:
			if !s.front.verify(r.hash) {
				continue
			}
			t.bytes += int64(r.size)
			p.objects++
			if s.writer != nil {
				s.toWrite = append(s.toWrite, Node{Hash: r.hash, Data: r.data})
			}
			if s.cfg.Received != nil {
				s.cfg.Received(r.hash, r.data)
			}
			for _, rt := range r.reused {
				s.reusedLocked(rt)
			}
			for _, c := range r.children {
				s.front.discover(c)
			}
			progressed = true
		case itemAbsent:
			t.missing++
			p.badObjects++
			s.retryLocked(asked[i:i+1], from)
		case itemCorrupt:
			t.corrupt++
			p.badObjects++
			s.retryLocked(asked[i:i+1], from)
		case itemUndecodable:
			s.failLocked(fmt.Errorf("node %s verifies against its hash but does not decode: the ledger is broken", r.hash.Hex()))
		}
	}
	if len(s.toWrite) > 0 {
		s.writer.add(s.toWrite)
		clear(s.toWrite) // the writer holds the data now; this array must not
		s.toWrite = s.toWrite[:0]
	}
	if progressed {
		s.lastVerified = now
		s.atLast = *t
		p.streak = 0
	} else if len(asked) > 0 {
		p.streak++
	}
	s.checkDoneLocked()
}

// failedLocked applies the failure of a request for asked, sent to from:
// its hashes go back to be asked again, preferably of another peer. No
// failure is a response time: the estimates behind timeouts and hedging
// (s.timing) never see one.
func (s *state) failedLocked(asked []ledger.Hash, from peer.ID, why failKind) {
	t := s.tally
	p := t.ended(from)
	p.failures++
	switch why {
	case failTimeout:
		// Not Expired: the policy's back-off would make the peer's next
		// requests wait longer, but a request here times out mostly
		// because a peer dropped it (a full queue, a lost or spoofed
		// answer), and waiting longer for the next one only delays its
		// retry. The streak deals with a peer that stops answering.
		t.timeouts++
		p.streak++
	case failDisconnected:
		t.disconnects++
	case failRefused:
		// Not in the streak: a refusal is an honest "not now" from a busy
		// peer, whose limiter in the scheduler already backs it off, and
		// it costs the fetch no wait. Counting it would soon make a busy
		// peer suspect, held to one hash at a time until it delivers.
		t.refused++
	}
	s.retryLocked(asked, from)
}

// sendFailedLocked puts back hashes whose send to the peer to the host
// refused. Nothing was sent, so nothing is counted but the error.
func (s *state) sendFailedLocked(hashes []ledger.Hash, to peer.ID) {
	s.tally.sendErrors++
	s.front.putBack(hashes, to)
}

// retryLocked puts hashes back to be asked again, away from the peer that
// failed them.
func (s *state) retryLocked(hashes []ledger.Hash, from peer.ID) {
	s.tally.retries += s.front.putBack(hashes, from)
}

// failLocked records that the fetch cannot finish, unless it already has.
func (s *state) failLocked(err error) {
	if s.fatal == nil && !s.front.complete() {
		s.fatal = err
	}
	s.closeDoneLocked()
}

func (s *state) checkDoneLocked() {
	if s.front.complete() {
		s.closeDoneLocked()
	}
}

func (s *state) closeDoneLocked() {
	if !s.doneClosed {
		s.doneClosed = true
		close(s.done)
	}
}

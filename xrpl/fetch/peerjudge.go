package fetch

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/penalty"
)

// The peer judge: both strategies judge every answer's objects with a
// penalty.Tracker. A peer whose answer is mostly missing or corrupt is
// benched: it gets no request until its back-off ends, so a peer that has
// nothing for this root costs a request per back-off, not one per round
// trip, and it is asked again when the back-off ends (it may have caught
// up). A peer judged useless (it sent corrupt objects) gets nothing more,
// is named in the report, and is handed to Config.Disconnect.
//
// A strategy that finds only benched peers to send to waits; since no
// answer may come to wake it (nothing else in flight), the state arms one
// timer at the earliest end of a bench that kept a request back, and the
// strategy's wake runs when it fires.

// UselessPeer is a peer the fetch judged useless and stopped asking: it
// answered mostly with corrupt objects, or sent far more unwanted bytes
// than wanted ones (see Config.Penalty, Config.Traffic).
type UselessPeer struct {
	ID      string `json:"id"`
	Reason  string `json:"reason"`  // e.g. "answers with corrupt objects: 9,412 of 9,600 objects corrupt"
	Judged  int    `json:"judged"`  // objects asked for in its judged answers
	Missing int    `json:"missing"` // of which missing
	Corrupt int    `json:"corrupt"` // of which corrupt
	// Judged by its traffic (Config.Traffic): the bytes it sent that were
	// wanted and unwanted.
	Wanted   int64 `json:"wanted_bytes,omitempty"`
	Unwanted int64 `json:"unwanted_bytes,omitempty"`
}

// LackingPeer is a peer that answered, and lacked every object the fetch
// asked of it: it has none of this ledger yet. It is behind, or it serves
// another ledger; a request names objects by hash, not the ledger they
// belong to, so the fetch cannot tell which, and it never drops a peer for
// lacking objects (see Config.Penalty). It is benched, and asked again
// each time its back-off ends.
type LackingPeer struct {
	ID      string `json:"id"`
	Missing int    `json:"missing"` // objects asked of it, all missing from its answers
}

// Reason says what a LackingPeer's answers showed, for a report or an
// error: "lacked all 272 objects asked: behind, or serves another ledger".
func (p LackingPeer) Reason() string {
	return fmt.Sprintf("lacked all %d objects asked: behind, or serves another ledger", p.Missing)
}

// lackingLocked returns the peers whose judged answers held only missing
// objects, by ID. It walks every peer the fetch has sent to: it is for the
// fetch's end.
func (s *state) lackingLocked() []LackingPeer {
	var out []LackingPeer
	for id := range s.tally.peers {
		if a := s.verdicts.tracker.Totals(id); a.Missing > 0 && a.Good == 0 && a.Corrupt == 0 {
			out = append(out, LackingPeer{ID: string(id), Missing: a.Missing})
		}
	}
	slices.SortFunc(out, func(a, b LackingPeer) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// verdicts is the state's judgment of peers. Guarded by the state's mu, except
// where said.
type verdicts struct {
	tracker *penalty.Tracker
	useless []UselessPeer // named, in the order judged
	// penalised holds every peer benched or useless, and perhaps some whose
	// bench has ended (dropped by avoidLocked): so that the strategy's
	// sender can avoid them at O(their number), not O(peers).
	penalised []peer.ID
	pending   []*penalty.UselessError // named, not yet handed to Config.Disconnect
	struckOut int                     // answers that struck their peer out (penalty.Verdict.StruckOut)
	wakeAt    time.Time               // when timer fires; zero if not armed
	timer     *clock.Timer
	// wake asks the strategy for another look at what it may send; it is
	// called from the timer's goroutine, without mu. Set once, at creation.
	wake func()
}

func newVerdicts(cfg Config) verdicts {
	t, err := penalty.New(cfg.Penalty)
	if err != nil {
		// withDefaults has made this very call.
		panic(fmt.Sprintf("fetch: a checked config fails penalty.New: %v", err))
	}
	return verdicts{tracker: t}
}

// judgeLocked judges the answer from from whose items were examined in
// results.
func (s *state) judgeLocked(from peer.ID, results []itemResult, now time.Time) {
	var a penalty.Answer
	for i := range results {
		switch results[i].kind {
		case itemOK:
			a.Good++
		case itemAbsent:
			a.Missing++
		case itemCorrupt:
			a.Corrupt++
		}
	}
	v := s.verdicts.tracker.Observe(from, now, a)
	if !v.Until.IsZero() && !slices.Contains(s.verdicts.penalised, from) {
		s.verdicts.penalised = append(s.verdicts.penalised, from)
	}
	if v.StruckOut {
		s.verdicts.struckOut++
	}
	if v.Useless != nil {
		s.verdicts.useless = append(s.verdicts.useless, UselessPeer{
			ID: string(from), Reason: v.Useless.Error(),
			Judged: v.Useless.Judged, Missing: v.Useless.Missing, Corrupt: v.Useless.Corrupt,
		})
		if s.cfg.Disconnect != nil {
			s.verdicts.pending = append(s.verdicts.pending, v.Useless)
		}
	}
}

// mayAskLocked reports whether a request may go to p at now: p is neither
// useless nor benched. A bench it reports arms the wake-up for its end.
func (s *state) mayAskLocked(p peer.ID, now time.Time) bool {
	if s.verdicts.tracker.Useless(p) {
		return false
	}
	until, benched := s.verdicts.tracker.Benched(p, now)
	if benched {
		s.armWakeLocked(until, now)
	}
	return !benched
}

// avoidLocked returns the peers benched at now or useless, in a new slice
// (nil if none), and forgets those no longer penalised. A bench it reports
// arms the wake-up for its end, when the list changes.
func (s *state) avoidLocked(now time.Time) []peer.ID {
	j := &s.verdicts
	kept := j.penalised[:0]
	for _, p := range j.penalised {
		if !s.mayAskLocked(p, now) {
			kept = append(kept, p)
		}
	}
	clear(j.penalised[len(kept):])
	j.penalised = kept
	if len(kept) == 0 {
		return nil
	}
	return slices.Clone(kept)
}

// armWakeLocked makes sure the strategy's wake runs at at, or earlier.
func (s *state) armWakeLocked(at, now time.Time) {
	j := &s.verdicts
	if s.finished || j.wake == nil || (!j.wakeAt.IsZero() && !at.Before(j.wakeAt)) {
		return
	}
	if j.timer != nil {
		j.timer.Stop()
	}
	j.wakeAt = at
	j.timer = s.cfg.Clock.AfterFunc(at.Sub(now), func() {
		s.mu.Lock()
		if !j.wakeAt.Equal(at) || s.finished {
			s.mu.Unlock()
			return // replaced by an earlier one, or the fetch ended
		}
		j.wakeAt = time.Time{}
		s.mu.Unlock()
		j.wake()
	})
}

// stopWakeLocked disarms the wake-up, at the fetch's end.
func (s *state) stopWakeLocked() {
	if s.verdicts.timer != nil {
		s.verdicts.timer.Stop()
	}
	s.verdicts.wakeAt = time.Time{}
}

// takeDisconnectsLocked returns the peers judged useless that are still to
// be handed to Config.Disconnect, and forgets them.
func (s *state) takeDisconnectsLocked() []*penalty.UselessError {
	p := s.verdicts.pending
	s.verdicts.pending = nil
	return p
}

// disconnect hands peers to Config.Disconnect. Called without mu.
func (s *state) disconnect(peers []*penalty.UselessError) {
	for _, e := range peers {
		s.cfg.Disconnect(e.Peer, e)
	}
}

// Package penalty judges peers by what their answers hold. A peer whose
// answers are mostly missing or corrupt is penalised: each such answer is a
// strike, and a peer with strikes is benched for a back-off that doubles
// with every strike in a row, up to a cap, less a random part (jitter) so
// that the penalised peers of one node, or the nodes that share one bad
// peer, do not all come back at the same moment. An answer at least half
// good clears the strikes and ends the bench at once.
//
// Missing objects only ever bench a peer. A peer that lacks what it is
// asked for may be behind (in an overlay catching up to a new ledger, a
// neighbour that lacks a node now holds it a moment later), and it cannot
// be told from one that serves another ledger: a request names nodes by
// hash, not the ledger they belong to, and a peer leaves out, as rippled
// does, whatever it lacks. So a peer that has lacked everything it was
// asked for is asked again each time its bench ends, however long that
// lasts: once its back-off is capped, it costs a request per bench, and a
// bench lasts at least half of MaxBackoff.
//
// Only a peer that lies (or, through Tracker.Traffic, one whose unwanted
// bytes exceed its wanted ones by more than Config.UnwantedAllowance) is
// condemned for good: after a threshold of strikes
// in a row, a peer most of whose objects (of those it sent, over its whole
// life) were corrupt is useless: bytes under a hash they do not hash to,
// which no honest peer sends, whichever ledger it holds (a peer that answers
// the root's hash with another ledger's root is one). The caller should
// disconnect it, and the verdict says why, with the counts ("answers with
// corrupt objects: 9,612 of 9,616 objects corrupt").
//
// A Tracker is plain data: no goroutines, no clock and no lock. Time is an
// argument and the jitter comes from a source seeded in the Config, so a
// run replays exactly. It is not safe for concurrent use; its owner guards
// it.
package penalty

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/peersched/peersched/peer"
)

// Defaults for the zero fields of Config.
const (
	DefaultBackoff    = 50 * time.Millisecond
	DefaultMaxBackoff = 5 * time.Second
	DefaultStrikes    = 5
)

// ErrBadConfig is returned by New for a Config it cannot use.
var ErrBadConfig = errors.New("penalty: bad config")

// ErrUseless is wrapped by every *UselessError.
var ErrUseless = errors.New("penalty: useless peer")

// Config sets how hard a Tracker judges. The zero Config uses the defaults.
type Config struct {
	// Backoff is the longest bench after a first strike (the jitter takes
	// up to half of it off). 0 means DefaultBackoff.
	Backoff time.Duration
	// MaxBackoff caps the bench, however many strikes. 0 means
	// DefaultMaxBackoff; it is raised to Backoff if below it.
	MaxBackoff time.Duration
	// Strikes is how many strikes in a row make a peer useless, provided
	// most of the objects it sent over its whole life were corrupt (an
	// honest peer with one bad patch is not thrown out for it, and missing
	// objects never make a peer useless). 0 means DefaultStrikes.
	Strikes int
	// Seed seeds the jitter.
	Seed uint64
	// UnwantedAllowance is how many bytes more than it sent wanted a peer
	// may send unwanted before it is useless (see Tracker.Traffic). 0
	// means DefaultUnwantedAllowance.
	UnwantedAllowance int64
}

// Answer is what one answer of a peer's held, object by object.
type Answer struct {
	Good    int // objects that verified
	Missing int // objects asked for and left out
	Corrupt int // objects whose bytes did not match their hash
}

func (a Answer) bad() int { return a.Missing + a.Corrupt }

// Verdict is a Tracker's judgment of a peer after an answer.
type Verdict struct {
	// Until is when the peer's bench ends; the zero Time if it is not
	// benched.
	Until time.Time
	// StruckOut is set on the answer whose strike brings the peer's
	// strikes in a row to Config.Strikes: it has answered badly for long,
	// whether or not it is useless (one that lacks objects never is). It is
	// set again only after a good answer has cleared the strikes.
	StruckOut bool
	// Useless, if not nil, says the peer has crossed the threshold, and
	// why. It is set once, on the answer or Traffic call that crossed it.
	Useless *UselessError
}

// UselessError says why a peer is useless: of the objects it was asked for
// in its judged answers, how many were corrupt (and how many missing).
// errors.Is matches it with ErrUseless.
type UselessError struct {
	Peer    peer.ID
	Judged  int // objects in its judged answers
	Missing int
	Corrupt int
	// Set when the peer was judged by its traffic (Tracker.Traffic): the
	// bytes it sent that were wanted and unwanted.
	Wanted, Unwanted int64
}

func (e *UselessError) Error() string {
	if e.Unwanted > 0 {
		return fmt.Sprintf("sends unwanted data: %s bytes late, duplicate or unasked, against %s bytes wanted", commas64(e.Unwanted), commas64(e.Wanted))
	}
	return fmt.Sprintf("answers with corrupt objects: %s of %s objects corrupt", commas(e.Corrupt), commas(e.Judged))
}

func (e *UselessError) Unwrap() error { return ErrUseless }

// Tracker judges peers. Create one with New; the zero value is not usable.
type Tracker struct {
	cfg   Config
	rng   *rand.Rand
	peers map[peer.ID]*record
}

// record is one peer's history.
type record struct {
	strikes int       // strikes in a row
	until   time.Time // end of the bench; zero if none
	total   Answer    // over every judged answer
	traffic Traffic   // the last totals Traffic was given
	useless bool
}

// New returns a Tracker with cfg, or an error wrapping ErrBadConfig for
// negative fields.
func New(cfg Config) (*Tracker, error) {
	if cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.Strikes < 0 || cfg.UnwantedAllowance < 0 {
		return nil, fmt.Errorf("%w: backoff %v, max backoff %v, strikes %d, unwanted allowance %d", ErrBadConfig, cfg.Backoff, cfg.MaxBackoff, cfg.Strikes, cfg.UnwantedAllowance)
	}
	if cfg.UnwantedAllowance == 0 {
		cfg.UnwantedAllowance = DefaultUnwantedAllowance
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = DefaultBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = DefaultMaxBackoff
	}
	cfg.MaxBackoff = max(cfg.MaxBackoff, cfg.Backoff)
	if cfg.Strikes == 0 {
		cfg.Strikes = DefaultStrikes
	}
	return &Tracker{
		cfg:   cfg,
		rng:   rand.New(rand.NewPCG(cfg.Seed, 0x70656e616c7479)), // "penalty"
		peers: make(map[peer.ID]*record),
	}, nil
}

// Observe judges the answer a from peer id, at now, and returns the
// verdict. An answer with more bad objects than good is a strike: the peer
// is benched for Backoff doubled per strike in a row before this one,
// capped at MaxBackoff, less up to half of it at random (see Jittered); a
// later strike that ends before the current bench does not shorten it. An
// answer with at least as many good objects as bad clears the strikes and
// the bench. An answer with no objects says nothing and changes nothing.
// The strike that brings the strikes in a row to Config.Strikes, or any
// later one, makes the peer useless if most of the objects it sent over its
// life (good and corrupt; missing ones are not sent) were corrupt; a peer
// that has sent no corrupt object never is. A useless peer stays useless.
func (t *Tracker) Observe(id peer.ID, now time.Time, a Answer) Verdict {
	r := t.peers[id]
	if r == nil {
		r = &record{}
		t.peers[id] = r
	}
	if a.Good+a.bad() == 0 {
		return t.verdict(r, now)
	}
	r.total.Good += a.Good
	r.total.Missing += a.Missing
	r.total.Corrupt += a.Corrupt
	if a.bad() <= a.Good {
		r.strikes, r.until = 0, time.Time{}
		return Verdict{}
	}
	r.strikes++
	until := now.Add(Jittered(Backoff(t.cfg.Backoff, t.cfg.MaxBackoff, r.strikes), t.rng.Float64()))
	if until.After(r.until) {
		r.until = until
	}
	v := t.verdict(r, now)
	v.StruckOut = r.strikes == t.cfg.Strikes
	if !r.useless && r.strikes >= t.cfg.Strikes && 2*r.total.Corrupt > r.total.Good+r.total.Corrupt {
		r.useless = true
		v.Useless = &UselessError{Peer: id, Judged: r.total.Good + r.total.bad(), Missing: r.total.Missing, Corrupt: r.total.Corrupt}
	}
	return v
}

func (t *Tracker) verdict(r *record, now time.Time) Verdict {
	if r.until.After(now) {
		return Verdict{Until: r.until}
	}
	return Verdict{}
}

// Benched reports whether peer id is benched at now, and until when. A
// useless peer is benched for as long as its last bench lasts: the caller
// that disconnects it keeps it off for good.
func (t *Tracker) Benched(id peer.ID, now time.Time) (until time.Time, benched bool) {
	r := t.peers[id]
	if r == nil || !r.until.After(now) {
		return time.Time{}, false
	}
	return r.until, true
}

// Totals returns what every answer of peer id judged so far held, object by
// object; the zero Answer for a peer never judged.
func (t *Tracker) Totals(id peer.ID) Answer {
	if r := t.peers[id]; r != nil {
		return r.total
	}
	return Answer{}
}

// Useless reports whether peer id has been judged useless.
func (t *Tracker) Useless(id peer.ID) bool {
	r := t.peers[id]
	return r != nil && r.useless
}

// Backoff returns the longest bench after the given strikes in a row: base
// doubled for each strike after the first, capped at most. It returns 0 for
// no strikes.
func Backoff(base, most time.Duration, strikes int) time.Duration {
	if strikes <= 0 {
		return 0
	}
	d := base
	for i := 1; i < strikes && d < most; i++ {
		d *= 2
	}
	return min(d, most)
}

// Jittered returns d less a random part of up to half of it: d/2 + u·d/2,
// for u in [0, 1) (the "equal jitter" of back-off with jitter), so the
// bench is never below half its length and never above it.
func Jittered(d time.Duration, u float64) time.Duration {
	half := d / 2
	return d - half + time.Duration(u*float64(half))
}

// commas writes n with thousands separators.
func commas(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

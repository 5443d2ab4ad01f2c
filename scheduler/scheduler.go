package scheduler

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/internal/lockorder"
	"github.com/peersched/peersched/internal/offerqueue"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// Scheduler is the message scheduler. Create one with New; the zero value is
// not usable.
type Scheduler struct {
	clock       clock.Clock
	realClock   bool // clock is the real clock: now reads time directly
	log         *slog.Logger
	epoch       time.Time
	maxSenders  int
	maxRequests int
	maxOffer    int
	rankSeed    uint64
	inline      bool
	budget      Budget
	// gated: a message's end may let a sender through even when no
	// channel reopens (it frees room in the in-flight budget or in a
	// class), so every end is followed by offers.
	gated bool
	// budgeted: the Budget caps something; without it, offers skip it.
	budgeted bool

	// stopped mirrors the field of the same name under the locks, for
	// checks that must not take them.
	stoppedFlag atomic.Bool
	panics      atomic.Uint64
	// owed counts receiver callbacks queued and not yet run: those
	// waiting, and those of the batch the drainer is running until the
	// batch ends (see drainLocked). It is raised under callbacksMu and read
	// without it.
	owed atomic.Int64
	// goexitInSend is the generation of the last offer through which a host
	// send called runtime.Goexit, so that the OnOffer it unwinds through
	// does not report it a second time.
	goexitInSend atomic.Uint64
	// handedOff is set, under callbacksMu, when work is handed to a
	// lingering drainer goroutine, which polls it without the lock.
	handedOff atomic.Bool

	// answersMu is where answers queue for the offers lock, when
	// queueAnswers is set (see lockForAnswer). It guards nothing.
	answersMu    lockorder.Mutex
	queueAnswers bool

	offersMu lockorder.Mutex
	// The following fields are guarded by offersMu.
	pool       peerpool.Pool
	queue      offerqueue.Queue
	book       offerqueue.Book
	bucket     *limit.Bucket  // the budget's rate; nil without one
	byteBucket *limit.Bucket  // the budget's byte rate; nil without one
	classes    *limit.Classes // nil without classes
	pass       *limit.Pass    // over classes, reset for every offer
	offerClass int32          // the open offer's sender's class plus one; 0 for none
	offerBytes int64          // the size the open offer's sender declared; 0 without a byte rate
	offerCost  int64          // what the open offer's sender declared each message costs a paced peer
	// bookingErrors counts bookings and releases that classes refused: a
	// broken invariant, which the tests check never happens.
	bookingErrors uint64
	// paced: a peer with a Rate has connected; pacing is each paced
	// connection's pacer, by pool slot, and holds the paced peers whose
	// bucket pays for no message yet (see pacing.go).
	// dearest is the highest cost any sender has declared
	// (offer.Options.Cost), at which every paced peer's pacer counts.
	paced   bool
	pacing  []pacedPeer
	holds   paceHeap
	dearest int64
	opened  []peer.ID // scratch for waking the senders set aside
	// counts counts every message and response; peers counts them by peer,
	// adding up to counts (see peerstats.go). Every event they count holds
	// this lock, and most hold requestsMu too.
	counts  messageCounts
	peers   peerRecords
	stopped bool // also guarded by requestsMu: set while holding both
	// offersDue: a pass of makeOffers is due, asked for by a step that
	// held this lock when it set dispatchWanted (an answer that reopened
	// a channel), and the drainer has not yet begun it. A sender queued
	// meanwhile, or a peer connected, is seen by that pass, so the call
	// need not ask for one (unlockAndWantOffers): on a request's path that
	// is one lock round trip fewer (see TestLockRoundTripsPerRequest).
	offersDue bool

	requestsMu lockorder.Mutex
	// The following fields are guarded by requestsMu.
	table      requests.Table // every request and notification, with its deadline
	timer      *clock.Timer
	timerArmed bool
	timerAt    time.Duration
	tokenDue   bool                // senders wait for the rate's next token, due at tokenAt
	tokenAt    time.Duration       // the timer is armed for it too
	finished   []requests.Finished // scratch for disconnects

	callbacksMu lockorder.Mutex
	// The following fields are guarded by callbacksMu.
	pending        callbackQueue
	batch          callbackQueue // the callbacks the drainer is running, taken from pending at once
	draining       bool          // a drainer is running
	lingering      bool          // a drainer goroutine ran out of work and waits for more; see lingerLocked
	drainers       int           // drainer goroutines that have not ended
	dispatchWanted bool          // an offer may be possible
	timerBusy      int           // timer callbacks running
	// sendsAfterStop counts, from Stop on, the sends claimed before it
	// whose bookkeeping has not ended (see sendEndedLocked).
	sendsAfterStop int
	quiet          chan struct{}
	quietClosed    bool            // quiet is closed: stopped, and nothing runs any more
	idleWaiters    []chan struct{} // closed when the drainer next has nothing to do; see whenIdle
}

// Lock ranks: the answers' queue first, offers before requests, and the
// callback queue last.
const (
	rankAnswers   lockorder.Rank = 5
	rankOffers    lockorder.Rank = 10
	rankRequests  lockorder.Rank = 20
	rankCallbacks lockorder.Rank = 30
)

// New returns a running Scheduler. It fails with ErrBadConfig for negative
// caps, a MaxRequests above MaxRequestsLimit, a bad RequestIDs range or
// one smaller than MaxRequests, a Budget that is negative, has a Burst
// without a Rate, a ByteRate without a ByteBurst or the other way round,
// or a burst above limit.MaxBurst, or Classes that limit.NewClasses
// refuses (the error wraps both).
func New(cfg Config) (*Scheduler, error) {
	maxRequests, idErr := requestIDConfig(cfg)
	switch {
	case idErr != nil:
		return nil, idErr
	case cfg.MaxSenders < 0, cfg.MaxRequests < 0, cfg.MaxOfferChannels < 0:
		return nil, fmt.Errorf("%w: caps must not be negative", ErrBadConfig)
	case cfg.MaxRequests > MaxRequestsLimit:
		return nil, fmt.Errorf("%w: MaxRequests above %d", ErrBadConfig, MaxRequestsLimit)
	}
	if err := cfg.Budget.validate(); err != nil {
		return nil, err
	}
	var classes *limit.Classes
	if len(cfg.Classes) > 0 {
		var err error
		if classes, err = limit.NewClasses(cfg.Classes); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
		}
	}
	bucket, byteBucket := cfg.Budget.buckets()
	s := &Scheduler{
		clock:       cfg.Clock,
		log:         cfg.Logger,
		maxSenders:  cfg.MaxSenders,
		maxRequests: maxRequests,
		maxOffer:    cfg.MaxOfferChannels,
		inline:      cfg.InlineCallbacks,
		budget:      cfg.Budget,
		gated:       cfg.Budget.MaxInFlight > 0 || classes != nil,
		budgeted:    cfg.Budget != (Budget{}),
		bucket:      bucket,
		byteBucket:  byteBucket,
		classes:     classes,
		quiet:       make(chan struct{}),
		// GOMAXPROCS is read once: the call takes a lock of the runtime's.
		queueAnswers: runtime.GOMAXPROCS(0) >= queueAnswersFrom,
	}
	if s.clock == nil {
		s.clock, s.realClock = clock.New(), true
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.maxSenders == 0 {
		s.maxSenders = DefaultMaxSenders
	}
	if s.maxRequests == 0 {
		s.maxRequests = DefaultMaxRequests
	}
	if s.maxOffer == 0 {
		s.maxOffer = DefaultMaxOfferChannels
	}
	switch {
	case cfg.KeepDepartedPeers == 0:
		s.peers.keep = DefaultKeepDepartedPeers
	case cfg.KeepDepartedPeers > 0:
		s.peers.keep = cfg.KeepDepartedPeers
	}
	s.rankSeed = cfg.RankSeed
	for s.rankSeed == 0 {
		s.rankSeed = rand.Uint64()
	}
	s.pool.SetRankSeed(s.rankSeed)
	s.pool.IgnoreOpened(true) // until a sender is set aside: see trackOpenedLocked
	s.book.SetLister(&s.pool) // offers list lazily: see openOfferLocked
	s.table.SetIDRange(cfg.RequestIDs)
	switch {
	case cfg.PassOverLimit == 0:
		s.queue.SetPassOverLimit(DefaultPassOverLimit)
	case cfg.PassOverLimit > 0:
		s.queue.SetPassOverLimit(cfg.PassOverLimit)
	}
	if classes != nil {
		s.pass = classes.NewPass()
	}
	s.epoch = s.clock.Now()
	s.answersMu.Init("answers", rankAnswers)
	s.offersMu.Init("offers", rankOffers)
	s.requestsMu.Init("requests", rankRequests)
	s.callbacksMu.Init("callbacks", rankCallbacks)
	return s, nil
}

// RankSeed returns the seed of the order of equally good channels:
// Config.RankSeed, or the seed New drew for it. A run on a simulated clock
// replays with it.
func (s *Scheduler) RankSeed() uint64 { return s.rankSeed }

// now returns the time since the scheduler's epoch, the unit of every
// deadline it keeps.
//
// It is read twice in every request's life. With the real clock it calls
// time.Since itself: the Clock interface's two extra calls cost about a
// tenth of the clock read they wrap.
func (s *Scheduler) now() time.Duration {
	if s.realClock {
		return time.Since(s.epoch)
	}
	return s.clock.Since(s.epoch)
}

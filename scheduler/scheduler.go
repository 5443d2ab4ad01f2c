// Package scheduler schedules a node's outbound traffic to its connected
// peers. Components hand it senders (waiting for open channels) and, with each
// request they send, a receiver (waiting for the response); the scheduler
// picks channels, assigns request IDs, routes responses, enforces timeouts,
// reacts to disconnects, and keeps the peers' channels shared fairly.
//
// # Concurrency
//
// A Scheduler is safe for concurrent use: every method may be called from any
// goroutine at any time, including from inside any callback (a sender's, a
// receiver's, or the host's Peer.Send). What a caller can rely on:
//
//   - No method waits for user code, except Shutdown and Call, which say so.
//     A method changes the scheduler's state before it returns (a sender is
//     queued or withdrawn, a response is accepted or dropped, a peer is
//     gone) and queues the callbacks that follow; it never deadlocks,
//     whoever calls it. Call, which sends one request and waits for its
//     answer (under a context.Context), must not be called inside a
//     callback: it would wait for itself until its context ends.
//   - Callbacks never run while the scheduler holds a lock.
//   - Callbacks run one at a time, in the order they were queued: sender and
//     receiver callbacks never run concurrently with each other or with one
//     another. They run on a goroutine the scheduler starts when there is work
//     and ends when there is none, so a host goroutine that calls Deliver or
//     Disconnect only records what happened and returns; it never runs other
//     components' code. The host's Peer.Send runs on whichever goroutine sends
//     through the offer: the callback goroutine when OnOffer sends itself.
//   - Callbacks queue without bound only as far as the caps allow: a request
//     counts against Config.MaxRequests until its receiver has been called,
//     so a slow receiver makes senders wait, it does not grow memory.
//   - With Config.InlineCallbacks, callbacks run instead on the goroutine
//     whose call found none running, before that call returns, together with
//     any that they cause: a call made from inside a callback then has its
//     effects, callbacks included, before the outermost call returns. That is
//     cheaper and, on a simulated clock, deterministic, at the price of host
//     goroutines running other components' callbacks.
//
// # Waiting senders
//
// Senders are matched to channels, not polled. A sender says what it wants
// when it is scheduled (offer.Options: peers to avoid, the only peers it
// may use, how many channels it wants to choose from), and an offer goes to
// it only when enough channels it wants are open, listing only those. A
// sender that sends nothing through an offer keeps its place but is
// parked: it has nothing to send, so it is offered nothing more until it
// calls Reoffer, which keeps its place and priority, and its next offer
// lists the channels open then. A channel opening therefore costs
// O(log N) in the N waiting senders, not a call to every one of them
// (package offer says more); Stats.SendersParked counts the parked
// senders, so one that never asks again does not starve unseen.
//
// # Traffic control
//
// Three controls decide how much is sent, on top of the offers' fairness;
// none of them returns an error to a sender, which simply waits its turn:
//
//   - Each peer has a limit on its messages in flight: fixed (Connect) or
//     adaptive (ConnectWith; a limit.Vegas by default, fed with the answers,
//     timeouts and refusals of the peer's requests: a host that learns a
//     peer turned a request away, overloaded, tells the scheduler with
//     Refuse). A peer's channels are only open below its current limit.
//   - Config.Budget caps the application's messages in flight and their
//     rate, over every peer, and perhaps their bytes per second, counted
//     at the sizes senders declare in ScheduleWith.
//   - Config.Classes cap the messages in flight of each class of traffic
//     that senders name in ScheduleWith, in a tree.
//
// A request may carry a soft deadline before its hard one
// (offer.Offer.RequestSoft): at the soft deadline a receiver.SlowReceiver is
// told the request is slow and the request goes on, so its sender can ask
// another peer; at the hard one it fails with receiver.Timeout.
//
// An offer lists the peers' open channels, and its size never exceeds what
// the budget and the sender's class allow at that moment. Offers go to
// higher priorities first, but a priority level passed over
// Config.PassOverLimit times takes its turn, so none starves.
//
// # Ranking
//
// An offer lists at most Config.MaxOfferChannels channels (64 by default),
// best first: the least loaded peers first, then the fastest, where smoothed
// response times within a factor of two may count as equal (they do when
// they fall in one octave of a grid that Config.RankSeed shifts: two times
// a ratio ρ < 2 apart count as different under a share log2 ρ of the seeds,
// and a ratio of 2 or more always does). Equal peers take turns: first
// those not yet sent to, in an order drawn from Config.RankSeed (a hash of
// the peer's ID and the seed), then the one sent to least recently. Schedulers with different seeds, seeing the same peers
// alike, therefore start on different peers; left at 0, the seed is drawn
// at random by New, so that nodes differ by default.
//
// # Metrics
//
// Stats is a consistent snapshot of the whole scheduler, and PeerStats one
// of each peer's counters, departed peers' included for a while (see
// Config.KeepDepartedPeers); both count response times in a Histogram of
// fixed buckets. Counting costs a few increments per request, under a lock
// the scheduler holds anyway. The module
// github.com/peersched/peersched/promexport exposes them to Prometheus.
//
// # Locks
//
// Two locks guard the state, and are always taken in this order: the offers
// lock (the peers' channels, the sender queue, the open offer) before the
// requests lock (the request table and the deadlines). A third, leaf lock
// guards the queue of callbacks to run. Build with the tag "lockorder" to have
// every acquisition checked.
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/internal/lockorder"
	"github.com/peersched/peersched/internal/offerqueue"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Defaults for the caps in Config.
const (
	DefaultMaxSenders  = 1 << 20
	DefaultMaxRequests = 1 << 22
	// DefaultPassOverLimit is Config.PassOverLimit's default: with two
	// priorities in use, the lower one is offered a channel within 10 offers
	// and the higher keeps 7 in 8.
	DefaultPassOverLimit = 7
	// DefaultMaxOfferChannels is how many channels an offer lists at most
	// by default: enough for a sender to spread a batch over many peers, few
	// enough that an offer's cost does not grow with the pool.
	DefaultMaxOfferChannels = 64
	// MaxRequestsLimit is the largest MaxRequests accepted: request IDs keep
	// a slot number in 32 bits, and notifications need slots too.
	MaxRequestsLimit = 1<<31 - 2
)

// Config configures a Scheduler. The zero Config is valid and uses the real
// clock, no logging, and the default caps.
type Config struct {
	// Clock is the source of all time. Nil means the real clock.
	Clock clock.Clock
	// Logger receives reports of recovered panics and other anomalies. Nil
	// means silence.
	Logger *slog.Logger
	// MaxSenders caps the number of waiting senders; Schedule beyond it fails
	// with offer.ErrTooManySenders. 0 means DefaultMaxSenders.
	MaxSenders int
	// MaxRequests caps the number of requests in flight; a send beyond it
	// fails with receiver.ErrTooManyRequests. 0 means DefaultMaxRequests.
	MaxRequests int
	// MaxOfferChannels caps how many channels one offer lists (N), the
	// best first. 0 means DefaultMaxOfferChannels. An offer costs more the
	// more channels it lists; a sender alone in the queue that wants more
	// channels than one offer shows schedules itself again and closes them
	// over successive offers. To list every open channel, set it to
	// math.MaxInt.
	MaxOfferChannels int
	// PassOverLimit bounds how long a lower priority waits while higher ones
	// keep senders waiting: after a priority level with waiting senders has
	// been passed over this many times for higher ones (k times, say), it
	// is starving and gets the next offer (the highest starving level
	// first); an offer to a starving level passes no one over. A level
	// whose senders may not be offered anything yet (they declined, or
	// their class is full) stays starving until one may.
	//
	// The bounds, with n priority levels in use: a level's first sender
	// that may be offered channels gets an offer within k + 2n − 1 offers,
	// and over a long run in which the highest level always has a sender to
	// offer to, it keeps at least k/(k+n−1) of the offers. With two
	// priorities in use, the lower is offered a channel within
	// PassOverLimit + 3 offers and the higher keeps PassOverLimit/(
	// PassOverLimit+1) of them. 0 means DefaultPassOverLimit; a negative
	// value means strict priorities, under which a lower priority waits as
	// long as a higher one has senders to offer to.
	PassOverLimit int
	// RankSeed seeds the order in which offers list channels that are
	// equally good (equally loaded, response times in one class; see
	// Ranking in the package documentation): equal peers take turns,
	// starting from a permutation the seed picks, and which response times
	// count as equal depends on the seed too, so that many nodes with
	// the same view of the same peers do not all send their first requests
	// to the same one, nor all avoid the same one.
	// 0 means a seed drawn at random by New (see RankSeed), so that nodes
	// differ by default; set it to replay a run exactly, as simulations and
	// tests do.
	RankSeed uint64
	// InlineCallbacks runs callbacks on the goroutine whose call found none
	// running, instead of on a goroutine of the scheduler's (see the package
	// documentation). Simulations on a mock clock set it so that a run
	// replays exactly.
	InlineCallbacks bool
	// RequestIDs, if not zero, is the range request IDs are drawn from, for
	// a host whose wire field is narrower than 64 bits (see
	// receiver.IDRange; the cursor goes round it in order, never issuing an
	// outstanding ID). MaxRequests must not exceed its size; 0 then means
	// the smaller of DefaultMaxRequests and the size.
	//
	// An answer names its request only by ID and peer, so an ID is not
	// issued again to the peer its last request went to until that
	// request's hard deadline has passed by as long again as its timeout
	// (its quarantine); it may go to another peer before, whose answers
	// alone can complete it. If every ID not outstanding is quarantined
	// for a request's peer, the range is too small for the traffic: the
	// next such ID in order is issued all the same, and
	// Stats.RequestIDsReusedEarly counts it. The quarantine is kept per
	// block of IDs, at most 16,384 blocks (48 bytes each), so in a range of
	// more IDs than that an ID may stay quarantined longer than its own
	// request needs, never shorter.
	RequestIDs receiver.IDRange
	// Budget caps the traffic of the whole application: messages in flight,
	// messages per second and bytes per second (at the sizes senders
	// declare), over every peer. While it is spent, senders wait. The zero
	// Budget caps nothing.
	Budget Budget
	// Classes declares the classes of traffic senders may book (see
	// ScheduleWith): each with a limit on its messages in flight and
	// perhaps a parent, whose limit caps it and its siblings together.
	// None by default.
	Classes []limit.Class
	// KeepDepartedPeers is how many disconnected peers' counters
	// PeerStats keeps reporting, the most recently departed: a peer that
	// reconnects while its counters are kept goes on counting from them,
	// so that its exported counters never go down. Beyond it the oldest
	// are forgotten, and count only in Stats' totals. 0 means
	// DefaultKeepDepartedPeers; a negative value keeps none.
	KeepDepartedPeers int
}

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
	// owed counts receiver callbacks queued and not yet started; sending
	// counts host sends begun and not yet accounted for. Both are changed
	// under the locks but read without them.
	owed    atomic.Int64
	sending atomic.Int64
	// goexitInSend is the generation of the last offer through which a host
	// send called runtime.Goexit, so that the OnOffer it unwinds through
	// does not report it a second time.
	goexitInSend atomic.Uint64

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
	// bookingErrors counts bookings and releases that classes refused: a
	// broken invariant, which the tests check never happens.
	bookingErrors uint64
	// paced: a peer with a Rate has connected; pacing is each paced
	// connection's pacer, by pool slot, and holds the paced peers whose
	// bucket pays for no message yet (see pacing.go).
	paced   bool
	pacing  []pacedPeer
	holds   paceHeap
	choices []peerpool.Choice // scratch for building offers
	opened  []peer.ID         // scratch for waking the senders set aside
	// counts counts every message and response; peers counts them by peer,
	// adding up to counts (see peerstats.go). Every event they count holds
	// this lock, and most hold requestsMu too.
	counts  messageCounts
	peers   peerRecords
	stopped bool // also guarded by requestsMu: set while holding both

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
	draining       bool // a drainer is running
	dispatchWanted bool // an offer may be possible
	timerBusy      int  // timer callbacks running
	quiet          chan struct{}
	quietClosed    bool            // quiet is closed: stopped, and nothing runs any more
	idleWaiters    []chan struct{} // closed when the drainer next has nothing to do; see whenIdle
}

// Lock ranks: offers before requests, and the callback queue last.
const (
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

// Connect adds a peer with a fixed limit of the given number of channels, all
// open, and offers them to waiting senders. It fails, changing nothing, with
// peer.ErrNilPeer, peer.ErrBadChannels, peer.ErrTooManyChannels,
// peer.ErrAlreadyConnected (a peer with the same ID is connected) or
// ErrStopped.
func (s *Scheduler) Connect(p peer.Peer, channels int) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	return s.connect(p, func(id peer.ID) (peerpool.Ref, error) { return s.pool.Connect(p, id, channels) })
}

// ConnectWith adds a peer whose limit (how many messages it may have in
// flight, its channels) is decided by opts: by default it adapts, starting
// at a few channels and following what the scheduler observes of the peer
// (see peer.Options and limit.Vegas). Its channels are offered to waiting
// senders at once.
//
// The peer's Limiter sees every request to the peer that is answered
// (limit.Answered), times out (limit.TimedOut) or is refused by the peer
// (limit.Failed, see Refuse), with its response time and the peer's load
// when it ended; requests that end otherwise (disconnect, stop, a send the
// host refused, an answer that came while the host's Send had not
// returned) say nothing about the peer's capacity and are not shown to it,
// nor are notifications. A lower limit never cancels a message in flight: the
// peer's channels stay closed as their messages end, until it is within its
// limit. PeerUsage reports each peer's current limit.
//
// A peer connected with a Rate (peer.Options.Rate) is also paced: it is
// never offered more channels than its rate pays for at that moment, each
// message costing it the Rate's Cost, so no send through an offer takes it
// over its rate. While its rate pays for no message, its channels stay
// closed to offers (PeerUsage shows them neither open nor closed) and
// senders wait, without errors; when it pays for one again (the scheduler
// arms its timer for that instant) its channels are offered at once. A
// send the host refuses gives its charge back.
//
// A panic in the Limiter's Limit when ConnectWith first reads it is
// recovered, logged and counted in Stats.PanicsHandled, as every panic in
// a Limiter is, and the peer is not connected: ConnectWith returns
// ErrLimiterPanicked. (A later panic, in Observe or in Limit after it,
// leaves the peer its limit: see peer.Options.)
//
// It fails, changing nothing, with peer.ErrNilPeer, limit.ErrBadBounds,
// limit.ErrBadRate, ErrLimiterPanicked, peer.ErrAlreadyConnected or
// ErrStopped.
func (s *Scheduler) ConnectWith(p peer.Peer, opts peer.Options) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	pacer, err := opts.NewPacer()
	if err != nil {
		return err
	}
	l, err := opts.NewLimiter()
	if err != nil {
		return err
	}
	start, panicked := peerpool.FirstLimit(l) // host code, perhaps: ask before taking any lock
	if panicked != nil {
		s.panics.Add(1)
		s.logLimiterPanic(panicked)
		return fmt.Errorf("%w: Limit, read at connect, panicked: %v", ErrLimiterPanicked, panicked.Value)
	}
	return s.connect(p, func(id peer.ID) (peerpool.Ref, error) {
		ref, err := s.pool.ConnectLimited(p, id, l, start)
		if err == nil && pacer != nil {
			s.paceLocked(ref, pacer, s.now())
		}
		return ref, err
	})
}

// connect adds p to the pool with add, which is called with p's ID under the
// offers lock, and offers its channels.
func (s *Scheduler) connect(p peer.Peer, add func(peer.ID) (peerpool.Ref, error)) error {
	id := p.ID() // host code: ask before taking any lock
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return ErrStopped
	}
	ref, err := add(id)
	if err != nil {
		s.offersMu.Unlock()
		return fmt.Errorf("%w: %q", err, id)
	}
	s.peers.connected(ref, id, s.now())
	s.requestsMu.Lock()
	s.table.Register(ref, id)
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.wantOffers()
	return nil
}

// Disconnect removes the peer named id. Its pending requests fail at once
// with reason Disconnected, at a cost proportional to their number; its
// channels are never offered again. It fails with peer.ErrUnknownPeer or
// ErrStopped.
func (s *Scheduler) Disconnect(id peer.ID) error {
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return ErrStopped
	}
	ref, err := s.pool.Disconnect(id)
	if err != nil {
		s.offersMu.Unlock()
		return fmt.Errorf("%w: %q", err, id)
	}
	s.requestsMu.Lock()
	s.finished = s.table.FailPeer(ref, s.finished[:0])
	s.callbacksMu.Lock()
	for i := range s.finished {
		f := &s.finished[i]
		s.settleEndedLocked(f) // a notification's channel just goes with its peer
		*f = requests.Finished{}
	}
	s.callbacksMu.Unlock()
	s.peers.disconnected(ref) // after counting its failed requests
	if s.paced {
		s.unpaceLocked(ref)
	}
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.afterReopening(s.gated) // the peer's messages freed budget
	return nil
}

// Schedule puts snd in the queue of waiting senders, behind those of the same
// or higher priority and ahead of those of lower priority (which a higher
// priority passes only so often: see Config.PassOverLimit), and returns a
// ticket to withdraw it with. snd may be offered channels before Schedule
// returns. It fails, changing nothing, with offer.ErrNilSender,
// offer.ErrTooManySenders or ErrStopped.
func (s *Scheduler) Schedule(snd offer.Sender, priority int) (offer.Ticket, error) {
	return s.ScheduleWith(snd, priority, offer.Options{})
}

// ScheduleWith is Schedule with the sender's terms in opts: its class, the
// size of its messages, and its wants (see offer.Options). A sender whose
// class, or any ancestor, has as many messages in flight as its limit is
// passed over while it is, keeping its place; once a message of the class
// ends it comes first again among those behind it. Its offers let it send
// only as many messages as the class has room for, and as the byte budget
// (Budget.ByteRate) pays for at the size it declares; while the byte
// budget cannot pay for one, the sender waits, keeping its place, and so
// do the senders behind it (see Budget). A sender with wants is offered
// only the channels it wants, and only when at least MinChannels of them
// are open; until then it is passed over, keeping its place. It fails,
// changing nothing, with offer.ErrNilSender, ErrBadBytes (a negative size,
// or one above the byte budget's ByteBurst), ErrBadWants (a negative
// MinChannels, one above MaxOfferChannels, or every Only peer avoided),
// ErrStopped, limit.ErrUnknownClass (a class not declared in
// Config.Classes) or offer.ErrTooManySenders.
func (s *Scheduler) ScheduleWith(snd offer.Sender, priority int, opts offer.Options) (offer.Ticket, error) {
	if snd == nil {
		return 0, offer.ErrNilSender
	}
	if err := s.budget.checkBytes(opts.Bytes); err != nil {
		return 0, err
	}
	if err := s.checkWants(&opts); err != nil {
		return 0, err
	}
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return 0, ErrStopped
	}
	class, classed := limit.ClassID(0), opts.Class != ""
	if classed {
		var err error
		if class, err = s.classOf(opts.Class); err != nil {
			s.offersMu.Unlock()
			return 0, err
		}
	}
	if s.queue.Len() >= s.maxSenders {
		s.offersMu.Unlock()
		return 0, offer.ErrTooManySenders
	}
	var t offer.Ticket
	if classed {
		t = s.queue.PushIn(snd, priority, class)
	} else {
		t = s.queue.Push(snd, priority)
	}
	if s.byteBucket != nil && opts.Bytes > 0 {
		s.queue.SetBytes(t, opts.Bytes)
	}
	s.queue.SetWants(t, opts.Only, opts.Avoid, opts.MinChannels)
	s.offersMu.Unlock()
	s.wantOffers()
	return t, nil
}

// checkWants returns an error wrapping ErrBadWants if a sender with the
// wants in opts could never be offered anything.
func (s *Scheduler) checkWants(opts *offer.Options) error {
	switch {
	case opts.MinChannels < 0:
		return fmt.Errorf("%w: MinChannels %d", ErrBadWants, opts.MinChannels)
	case opts.MinChannels > s.maxOffer:
		return fmt.Errorf("%w: MinChannels %d, above MaxOfferChannels %d", ErrBadWants, opts.MinChannels, s.maxOffer)
	}
	if len(opts.Only) == 0 {
		return nil
	}
	for _, id := range opts.Only {
		if !slices.Contains(opts.Avoid, id) {
			return nil
		}
	}
	return fmt.Errorf("%w: every peer in Only is in Avoid", ErrBadWants)
}

// Reoffer asks for another offer to the sender named t, which keeps its
// place in the queue and its priority: it is how a sender that sent
// nothing through an offer, and so was parked, says it has something to
// send again (see offer.Sender). A parked sender is offered channels again
// as soon as its turn comes, possibly before Reoffer returns. Called while
// an offer to the sender is open (from inside its OnOffer, say) or its
// sends are in progress, it keeps that offer's end from parking the
// sender. For a sender waiting for an offer already it changes nothing.
// It returns whether the sender was waiting: false, changing nothing, if
// it has left (by a send, a withdrawal or a discard) or t names none.
func (s *Scheduler) Reoffer(t offer.Ticket) bool {
	s.offersMu.Lock()
	live, open := s.book.Live()
	if !s.queue.Reoffer(t, open && live == t) {
		s.offersMu.Unlock()
		return false
	}
	s.offersMu.Unlock()
	s.wantOffers()
	return true
}

// WithdrawSender takes the sender named t out of the queue. It returns true
// if the sender was still waiting: it is gone from the queue, it is never
// offered channels again nor discarded, and if an offer to it is open, that
// offer expires at once, so no send through it can begin any more. (An offer
// made just before the withdrawal may still reach OnOffer just after it,
// already expired: Len 0, every send failing with offer.ErrExpired.) It
// returns false, changing nothing, if the sender had already left: by a send
// that succeeded, by discard, or by an earlier withdrawal.
//
// WithdrawSender does not wait for a running OnOffer to return, since the
// caller may be that very call or something it waits for (as Stop of a
// time.AfterFunc timer does not wait for its function). A send that OnOffer
// began before the withdrawal finishes as usual; if the host accepts it, the
// request is live and its receiver will be called.
//
// Under a byte budget the withdrawn sender may have been the one the
// senders behind it waited for (see Budget); they are offered channels at
// once if the budget pays for them.
func (s *Scheduler) WithdrawSender(t offer.Ticket) bool {
	s.offersMu.Lock()
	if _, waiting := s.queue.Remove(t); !waiting {
		s.offersMu.Unlock()
		return false
	}
	if live, ok := s.book.Live(); ok && live == t {
		s.book.Expire()
	}
	s.offersMu.Unlock()
	if s.byteBucket != nil {
		s.wantOffers()
	}
	return true
}

// WithdrawReceiver takes the receiver away from request id. If it returns
// true, none of the receiver's methods will be called for id. The request
// keeps its channel closed until its response or deadline comes. It returns
// false if the request has already ended (its callback has run or is about
// to) or was already withdrawn.
func (s *Scheduler) WithdrawReceiver(id peer.RequestID) bool {
	s.requestsMu.Lock()
	defer s.requestsMu.Unlock()
	return s.table.Withdraw(id)
}

// Deliver hands the scheduler a response that the peer named from sent for
// request id. It never runs user code (unless callbacks are inline): the
// receiver is called later, on the callback goroutine. The response is
// accepted only from the peer the request was sent to, only once, and only
// before the request's deadline, and, if the request expects a type
// (offer.Request.Expect), only of that type; then the request's receiver
// gets it and the channel reopens. Otherwise it is dropped, counted, and
// Deliver returns why: receiver.ErrUnknownRequest, receiver.ErrWrongPeer,
// receiver.ErrDuplicateResponse, receiver.ErrLateResponse,
// receiver.ErrWrongResponseType (the request stays live: its right
// response may still come), or ErrStopped.
func (s *Scheduler) Deliver(from peer.ID, id peer.RequestID, response any) error {
	return s.answer(from, id, response, false)
}

// Refuse tells the scheduler that the peer named from answered request id
// with a refusal: it would not serve it (it is overloaded, or busy). The
// refusal is accepted, or dropped and counted, exactly as Deliver accepts
// or drops a response, with the same errors; it is the peer's one answer,
// so a response or refusal after it is a duplicate. An accepted refusal
// ends the request as a response does (its channel reopens, within the
// peer's limit, and its class and budget are released), its receiver gets
// OnFailure with reason receiver.Refused, and Stats counts it in Refused.
// A refusal that comes while the host's Send of the request has not yet
// returned waits for it, as an early response does.
//
// The peer's Limiter sees the refusal as limit.Failed, with the time from
// send to refusal, and backs off. The peer's smoothed response time, which
// ranks its channels in offers, does not take it: a refusal comes back
// fast because the peer did no work, and would make the most overloaded
// peer look like the best one.
func (s *Scheduler) Refuse(from peer.ID, id peer.RequestID) error {
	return s.answer(from, id, nil, true)
}

// answer is Deliver (a response) and Refuse (refused set).
func (s *Scheduler) answer(from peer.ID, id peer.RequestID, response any, refused bool) error {
	// Both locks at once: the request ends (requests) and its channel
	// reopens (offers) in one step. This is the hottest path there is, and
	// taking each lock once is cheaper than handing the channel over in a
	// second round trip.
	s.offersMu.Lock()
	s.requestsMu.Lock()
	if s.stopped {
		s.requestsMu.Unlock()
		s.offersMu.Unlock()
		return ErrStopped
	}
	now := s.now()
	// Deadlines that have passed are enforced first, so a response that
	// comes after its deadline is late even if the timer has not fired yet.
	reopened := s.expireDueLocked(now)
	var f requests.Finished
	var ended bool
	var err error
	if refused {
		f, ended, err = s.table.Refuse(id, from)
	} else {
		f, ended, err = s.table.Respond(id, from, response)
	}
	if err != nil {
		s.countDroppedLocked(from, err)
		s.requestsMu.Unlock()
		s.offersMu.Unlock()
		s.logDropped(from, id, refused, err)
		s.afterReopening(reopened)
		return err
	}
	if ended {
		s.countEndLocked(&f, now)
		s.releaseLocked(f.Terms)
		outcome := limit.Answered
		if f.Reason == receiver.Refused {
			outcome = limit.Failed
		}
		s.observeLocked(&f, outcome, now)
		reopened = s.endLocked(f.Peer) || reopened
	}
	// One acquisition of the callback queue both queues the receiver's
	// call and runs the drainer; the other locks go first, as the drainer
	// needs them free.
	s.callbacksMu.Lock()
	if ended {
		s.oweLocked(&f)
	}
	s.dispatchWanted = s.dispatchWanted || reopened
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.runLocked()
	s.callbacksMu.Unlock()
	return nil
}

// endLocked ends the message on a closed channel of the peer ref and reports
// whether offers may follow: if its channel reopened, or, under an in-flight
// budget or with classes (whose room the message frees), in any case.
// Caller holds offersMu.
func (s *Scheduler) endLocked(ref peerpool.Ref) bool {
	return s.pool.Reopen(ref) || s.gated
}

// afterReopening runs the callbacks and, if a channel reopened, the offers
// that follow a step.
func (s *Scheduler) afterReopening(reopened bool) {
	if reopened {
		s.wantOffers()
		return
	}
	s.run()
}

// oweLocked queues the receiver call for a finished request, if it still has
// a receiver (a withdrawn request has none), and counts it as owed until the
// drainer starts it. Caller holds callbacksMu.
func (s *Scheduler) oweLocked(f *requests.Finished) {
	if f.Receiver != nil {
		s.pending.pushFinished(f)
		s.owed.Add(1)
	}
}

// settleEndedLocked settles the message f that an event other than its own
// answer or deadline ended (a disconnect, a stop): its class and budget are
// released and, for a request, its end counted and its receiver's call
// queued. Caller holds offersMu, requestsMu and callbacksMu.
func (s *Scheduler) settleEndedLocked(f *requests.Finished) {
	s.releaseLocked(f.Terms)
	if !f.Notification {
		s.countEndLocked(f, 0) // no answer: its time is not read
		s.oweLocked(f)
	}
}

// countEndLocked counts how request f ended at now, in all and for its
// peer. now is read only for an answered request, for its response time.
// Caller holds offersMu.
func (s *Scheduler) countEndLocked(f *requests.Finished, now time.Duration) {
	peer := s.peers.of(f.Peer, f.PeerID)
	if f.Receiver != nil && f.Answered() {
		took := now - f.SentAt
		bucket := bucketOf(took)
		s.counts.answered(took, bucket)
		peer.answered(took, bucket)
		return
	}
	s.counts.failed(f)
	peer.failed(f)
}

// logDropped reports a response (or a refusal) that Deliver (or Refuse)
// dropped. An unknown ID or the wrong peer points at a misbehaving host or
// peer and is a warning; late and duplicate responses happen in healthy
// networks and are debug records. The level is checked first so that a
// silent logger costs nothing.
func (s *Scheduler) logDropped(from peer.ID, id peer.RequestID, refusal bool, err error) {
	level := slog.LevelDebug
	if errors.Is(err, receiver.ErrUnknownRequest) || errors.Is(err, receiver.ErrWrongPeer) || errors.Is(err, receiver.ErrWrongResponseType) {
		level = slog.LevelWarn
	}
	if ctx := context.Background(); s.log.Enabled(ctx, level) {
		msg := "peersched: dropped a response"
		if refusal {
			msg = "peersched: dropped a refusal"
		}
		s.log.Log(ctx, level, msg, "from", string(from), "request", uint64(id), "reason", err.Error())
	}
}

// countDroppedLocked counts a response or refusal from the peer named from
// that was dropped for err, in all and against that peer. Caller holds
// offersMu.
func (s *Scheduler) countDroppedLocked(from peer.ID, err error) {
	s.counts.dropped(err)
	s.peers.ofID(from).dropped(err)
}

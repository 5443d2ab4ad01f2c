package scheduler

import (
	"log/slog"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/limit"
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
	// best first. 0 means DefaultMaxOfferChannels. An offer's list is the
	// one of the moment it is made, but the scheduler ranks the channels
	// after the first only when its sender reads past the first (Channel,
	// All, or a send on another), so an offer whose sender uses its first
	// channel costs the same whatever the cap; one whose sender reads on
	// costs more the more channels it lists. A sender alone in the queue
	// that wants more channels than one offer shows schedules itself again
	// and closes them over successive offers. To list every open channel,
	// set it to math.MaxInt.
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
	// equally good (as many messages in flight, response times in one class; see
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

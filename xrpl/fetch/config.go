package fetch

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/timeouts"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/penalty"
)

// Defaults for the zero fields of Config.
const (
	DefaultBatch         = 64
	DefaultTimeout       = 2 * time.Second
	DefaultMinTimeout    = 500 * time.Millisecond
	DefaultStallTimeout  = 20 * time.Second
	DefaultProgressEvery = time.Second
	DefaultSetSize       = 2

	// MaxBatch is the largest Batch accepted: the item limit that package
	// wire's decoders apply by default, so a request always fits what a
	// peer accepts.
	MaxBatch = 4096
)

// ErrBadConfig is returned for a Config that cannot describe a fetch.
var ErrBadConfig = errors.New("fetch: bad config")

// Config describes one fetch. Only Root is required.
type Config struct {
	// Root names the ledger to fetch. Required (the zero Hash names no node).
	Root ledger.Hash
	// Expected is how many nodes the fetch will download, if the caller
	// knows (the ledger's node count, for a fetch without a Base; with a
	// Store, the fetch takes off the nodes it resumes with); it only feeds
	// Progress and the report. 0 means unknown.
	Expected int
	// Base, if set, holds nodes the fetch already has, such as those of the
	// ledger before this one: the fetch walks down from Root and, wherever
	// it meets a hash that Base holds, takes that node and its subtree from
	// Base instead of asking peers (counted in Report.Reused). This is how a
	// node catches up from ledger to ledger.
	Base Store
	// Store, if set, keeps every node that arrives and verifies, written
	// in batches by a goroutine of the fetch's own (the answers wait for it
	// only when it falls far behind), parent before children; Run returns
	// once they are all written. A fetch given a Store that holds part of
	// the tree under Root, as a fetch that was stopped or killed leaves it,
	// resumes: it takes what the Store holds (counted in Report.Resumed) and
	// asks only for the nodes it lacks. A value in the Store that does not
	// hash to its name counts as absent. Nodes taken from Base are not
	// written to the Store.
	Store NodeStore
	// Received, if set, is called with every node that arrived and
	// verified, once per node, while the fetch holds its lock: it must be
	// quick and must not call back into the fetch. data is not modified
	// afterwards and may be kept.
	Received func(h ledger.Hash, data []byte)

	// Batch is how many hashes one request asks for. 0 means DefaultBatch.
	// With a PeerRate, Run asks for more of a peer whose rate binds.
	Batch int
	// PeerRate is the rate the host keeps each peer within
	// (peer.Options.Rate, such as RippledRate), if it declared one. Run
	// then chooses each request's size itself: Batch while the peer's
	// channels bind, and more while its rate does, up to MaxAutoBatch
	// (see batchSize), so that a peer the rate holds to a few requests a
	// second still yields as many objects as its channels would. The zero
	// Rate keeps every request at Batch. The Peerset ignores it.
	PeerRate limit.Rate
	// Timeout is how long a request may wait for its response. 0 means
	// DefaultTimeout. Run waits less for a peer whose response times it
	// has measured (see MinTimeout); the Peerset always waits Timeout.
	Timeout time.Duration
	// MinTimeout is the least Run waits for a response. Run's deadlines
	// come from a timeouts.Estimator with MinTimeout and Timeout as its
	// bounds: a request to a peer that has answered before waits its
	// smoothed response time plus four deviations (TCP's retransmission
	// timeout, RFC 6298), between MinTimeout and Timeout; one to a peer not
	// heard from yet waits the same computed over every peer's answers, or
	// Timeout before any answer. 0 means DefaultMinTimeout, or Timeout if
	// that is smaller.
	MinTimeout time.Duration
	// HedgesPerThousand caps Run's hedging (see Report.Hedges and
	// package hedge's Budget): at most this many hedges for every thousand
	// other requests sent, plus hedge.DefaultBurst (10). 0 means
	// hedge.DefaultPerThousand (50: 5%); it may be at most 1000, which
	// lets every request be hedged once. Run hedges only at the tail of
	// the fetch, a request past its soft deadline (its peer's p95-like
	// response time), through a hedge.Hedger; where peers lose many
	// answers the tail wants more hedges than 5%, and the requests left
	// unhedged wait out their timeouts (with a tenth of the answers lost
	// and 5s timeouts, a test fetch took 20s at 5% and 10s at 1000, as
	// TestHedgeBudgetCapsHedges logs).
	HedgesPerThousand int
	// StallTimeout ends the fetch with an *IncompleteError when no object
	// has verified for this long. 0 means DefaultStallTimeout.
	StallTimeout time.Duration

	// Clock measures everything; nil means the real clock. Give the
	// scheduler and the network the same one.
	Clock clock.Clock
	// Progress, if set, is called every ProgressEvery while the fetch runs
	// and once more at its end (with Done set), from the goroutine that
	// called Run. It must not call back into the fetch.
	Progress func(Progress)
	// ProgressEvery is how often Progress is called and the stall is
	// checked. 0 means DefaultProgressEvery.
	ProgressEvery time.Duration

	// Penalty sets how the fetch judges peers by their answers (package
	// penalty): a peer whose answer is mostly missing or corrupt objects
	// gets no request until its back-off ends (doubling with each such
	// answer in a row up to Penalty.MaxBackoff, with jitter seeded by
	// Penalty.Seed), and is asked again when it ends. Missing objects only
	// ever bench a peer: one that lacks them may be behind, and will have
	// them later (a peer that has lacked every object asked of it is named
	// in Report.Lacking). After Penalty.Strikes such answers in a row, if
	// most objects it sent were corrupt, it lies, and is useless: the fetch
	// sends it nothing more, names it in Report.Useless (and in the
	// IncompleteError) with the reason, and calls Disconnect. The zero
	// value uses package penalty's defaults.
	Penalty penalty.Config
	// Disconnect, if set, is called once for each peer the fetch judges
	// useless, with the reason (a *penalty.UselessError), so that the host
	// disconnects it and keeps it away (a transport that redials must not
	// bring it back). It is called without the fetch's locks, from the
	// goroutine of the callback or Deliver that judged the peer (or, for a
	// peer judged by its traffic, from the goroutine that called Run), and may
	// call the scheduler or the Peerset (its Disconnect, say).
	Disconnect func(id peer.ID, reason error)
	// Traffic, if set, is called every ProgressEvery for the bytes each
	// peer has sent so far, as running totals (the transport counts them:
	// see tcpnet.ConnConfig.Traffic): those its host took, and those it
	// refused, late, duplicate, unasked or of the wrong type. A peer whose
	// unwanted bytes exceed its wanted ones by more than
	// Penalty.UnwantedAllowance is judged useless, as above (see
	// penalty.Tracker.Traffic). It is called from the goroutine that called
	// Run, without the fetch's locks.
	Traffic func() map[peer.ID]penalty.Traffic

	// Priority is the scheduler priority of the fetch's sender (Run only).
	Priority int
	// Bytes is the size Run declares for each of its requests and hedges
	// (offer.Options.Bytes), which a scheduler with a byte budget
	// (scheduler.Budget.ByteRate) charges for each. It must not exceed the
	// budget's ByteBurst, or the fetch cannot schedule its sender and
	// fails. 0 declares nothing: the fetch's requests are then not counted
	// in bytes. The other strategies ignore it.
	Bytes int64
	// SetSize is how many peers the Peerset strategy starts with. 0 means
	// DefaultSetSize.
	SetSize int
}

// withDefaults returns c with its zero fields filled in, or an error wrapping
// ErrBadConfig.
func (c Config) withDefaults() (Config, error) {
	if c.Root == (ledger.Hash{}) {
		return c, fmt.Errorf("%w: no root hash", ErrBadConfig)
	}
	if c.Batch < 0 || c.Batch > MaxBatch || c.Timeout < 0 || c.MinTimeout < 0 || c.StallTimeout < 0 ||
		c.ProgressEvery < 0 || c.Expected < 0 || c.SetSize < 0 || c.HedgesPerThousand < 0 || c.Bytes < 0 {
		return c, fmt.Errorf("%w: batch %d (max %d), timeout %v, min timeout %v, stall %v, progress %v, expected %d, set %d, hedges per thousand %d, bytes %d",
			ErrBadConfig, c.Batch, MaxBatch, c.Timeout, c.MinTimeout, c.StallTimeout, c.ProgressEvery, c.Expected, c.SetSize, c.HedgesPerThousand, c.Bytes)
	}
	if err := c.PeerRate.Validate(); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MinTimeout == 0 {
		c.MinTimeout = DefaultMinTimeout
	}
	c.MinTimeout = min(c.MinTimeout, c.Timeout)
	if c.StallTimeout == 0 {
		c.StallTimeout = DefaultStallTimeout
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = DefaultProgressEvery
	}
	if c.SetSize == 0 {
		c.SetSize = DefaultSetSize
	}
	if c.HedgesPerThousand == 0 {
		c.HedgesPerThousand = hedge.DefaultPerThousand
	}
	if c.Clock == nil {
		c.Clock = clock.New()
	}
	// The timeout policy and the hedge budget check their own bounds (a
	// Timeout within timeouts.MaxDeadline and above its granularity, at most a
	// thousand hedges per thousand): ask them, rather than keep a copy of
	// their rules here.
	if _, err := timeouts.NewEstimator(c.timing()); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if _, err := hedge.NewBudget(c.hedging()); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if _, err := penalty.New(c.Penalty); err != nil {
		return c, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return c, nil
}

// timing is the configuration of Run's timeout policy: RFC 6298's estimate
// between MinTimeout and Timeout, and Timeout before any answer.
func (c Config) timing() timeouts.EstimatorConfig {
	return timeouts.EstimatorConfig{Min: c.MinTimeout, Max: c.Timeout, Initial: c.Timeout}
}

// hedging is the configuration of Run's hedge budget: HedgesPerThousand,
// with no cap on the tokens saved, since Run hedges only at the tail and
// needs what the whole fetch earned.
func (c Config) hedging() hedge.BudgetConfig {
	return hedge.BudgetConfig{PerThousand: c.HedgesPerThousand, Cap: math.MaxInt32}
}

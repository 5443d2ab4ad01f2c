package node

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/wire"
)

// The components' priorities on the shared scheduler: higher goes first.
const (
	PriorityFetch  = 0
	PriorityRelay  = 1
	PriorityLookup = 2
)

// Defaults for the zero fields of Config.
const (
	DefaultLookupTimeout = time.Second
	DefaultLookupTries   = 3
	DefaultDigest        = 10 * time.Millisecond
	// MaxPerSecond is the highest rate a component accepts (ErrBadConfig
	// above it): a tick per millisecond.
	MaxPerSecond = 1000
)

// ErrBadConfig is wrapped by OnScheduler's and NewRouter's error for a
// Config they cannot use: Lookups or Relay outside 0 to MaxPerSecond,
// Lookups without Keys, or a negative LookupTimeout, LookupTries or Digest;
// and by NewRouter's for a nil fetch host.
var ErrBadConfig = errors.New("node: bad config")

// Config describes the components that run beside the fetch. The zero
// Config runs none.
type Config struct {
	// Clock measures everything; nil means the real clock. Give the
	// scheduler, the network and the fetch the same one.
	Clock clock.Clock
	// Seed seeds the random draw, with replacement, of the key each lookup
	// asks for.
	Seed uint64

	// Lookups is how many lookups start each second, evenly spaced; 0 runs
	// none. Each asks one peer for one node of Keys by hash (a
	// ledger.GetObjects of one hash), as an RPC server answering "what is
	// in account X" asks for the entry's leaf, and is done when an answer
	// holds the node: a try that fails (no answer by LookupTimeout, a
	// disconnect, a refusal, or an answer without the node) is made again
	// of another peer, up to LookupTries tries.
	Lookups float64
	// Keys are the nodes lookups ask for, each lookup one drawn at random
	// (see Seed). Required with Lookups.
	Keys []ledger.Hash
	// LookupTimeout is each try's deadline. 0 means DefaultLookupTimeout.
	LookupTimeout time.Duration
	// LookupTries is how many tries a lookup makes. 0 means
	// DefaultLookupTries.
	LookupTries int

	// Relay is how many notifications go to every connected peer each
	// second, evenly spaced; 0 runs no relay. Each is Notice, sent as a
	// notification (request ID 0).
	Relay float64
	// Digest is how long a notification keeps its channel closed on the
	// shared scheduler: the time the peer needs to take it in. 0 means
	// DefaultDigest.
	Digest time.Duration
}

// withDefaults returns c with its zero fields filled in, or an error
// wrapping ErrBadConfig.
func (c Config) withDefaults() (Config, error) {
	switch {
	case !(c.Lookups >= 0 && c.Lookups <= MaxPerSecond) || !(c.Relay >= 0 && c.Relay <= MaxPerSecond):
		return c, fmt.Errorf("%w: %v lookups and %v notifications a second: want 0 to %d", ErrBadConfig, c.Lookups, c.Relay, MaxPerSecond)
	case c.Lookups > 0 && len(c.Keys) == 0:
		return c, fmt.Errorf("%w: lookups without keys to look up", ErrBadConfig)
	case c.LookupTimeout < 0 || c.LookupTries < 0 || c.Digest < 0:
		return c, fmt.Errorf("%w: lookup timeout %v, tries %d, digest %v", ErrBadConfig, c.LookupTimeout, c.LookupTries, c.Digest)
	}
	if c.Clock == nil {
		c.Clock = clock.New()
	}
	if c.LookupTimeout == 0 {
		c.LookupTimeout = DefaultLookupTimeout
	}
	if c.LookupTries == 0 {
		c.LookupTries = DefaultLookupTries
	}
	if c.Digest == 0 {
		c.Digest = DefaultDigest
	}
	return c, nil
}

// every returns the period of a rate of perSecond.
func every(perSecond float64) time.Duration {
	return time.Duration(math.Round(float64(time.Second) / perSecond))
}

// Notice is what relay sends: a small notification of a type every peer
// takes in and skips (a TMStatusChange), as relayed transactions would be.
var Notice = func() wire.Frame {
	b, err := wire.AppendChatter(nil, wire.TypeStatusChange, 1)
	if err != nil {
		panic(err) // a type AppendChatter frames
	}
	return wire.Frame{Type: wire.TypeStatusChange, Payload: b[wire.HeaderSize:]}
}()

// NoticeCost is what relay declares each notification costs a paced peer
// (offer.Options.Cost), in rippled's fee units, those of fetch.RippledRate:
// a rippled peer charges an ordinary message, as a TMStatusChange is, the
// trivial fee, where a TMGetObjectByHash query costs resource.FeeQuery.
// Lookups, which are such queries, declare no cost: they cost the peer's
// Rate.Cost, as the fetch's requests do.
const NoticeCost = int64(resource.FeeTrivial)

// LookupBytes is the wire size of a lookup's request, and NoticeBytes of a
// notification: what each declares to a byte budget.
var (
	LookupBytes = int64(wire.MessageSize(math.MaxUint32, ledger.GetObjects{Hashes: make([]ledger.Hash, 1)}))
	NoticeBytes = int64(wire.MessageSize(0, Notice))
)

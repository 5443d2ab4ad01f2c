package timeouts

import (
	"sync"
	"time"

	"github.com/peersched/peersched/peer"
)

// Estimator is the adaptive Policy: each peer's deadlines come from its own
// measured response times, RFC 6298's way, or from every peer's while it
// has none (see the package documentation for the formulas).
//
// It keeps a few words per peer it has heard of (by Observe or Expired)
// until Forget. It is safe for concurrent use (a mutex, uncontended in the
// usual case of one sender's callbacks, which never run concurrently). The
// zero value is not usable; build one with NewEstimator.
type Estimator struct {
	cfg EstimatorConfig // never changes

	mu sync.Mutex
	// The following fields are guarded by mu.
	pool  estimate // every sample of every peer
	peers map[peer.ID]peerEstimate
}

// peerEstimate is what an Estimator knows of one peer.
type peerEstimate struct {
	own estimate
	// expired counts the peer's requests that reached their hard deadline
	// since its last sample: the hard deadline is doubled that many times.
	// It stops at maxBackoffs.
	expired uint8
}

// maxBackoffs bounds peerEstimate.expired: 63 doublings take any deadline
// of a nanosecond or more past MaxDeadline, so more could change nothing.
const maxBackoffs = 63

var _ Policy = (*Estimator)(nil)

// NewEstimator returns an Estimator with no measurement yet: every peer's
// deadlines are (Min, Initial) until one answers. It fails with an error
// wrapping ErrBadConfig if c is out of range (see EstimatorConfig).
func NewEstimator(c EstimatorConfig) (*Estimator, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Estimator{cfg: c, peers: make(map[peer.ID]peerEstimate)}, nil
}

// Config returns the Estimator's configuration, its defaults filled in.
func (e *Estimator) Config() EstimatorConfig { return e.cfg }

// Deadlines returns the soft and the hard deadline of a request sent now
// to p, with 0 < soft <= hard <= Max and hard >= Min. It changes nothing.
func (e *Estimator) Deadlines(p peer.ID) (soft, hard time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pe := e.peers[p]
	est := pe.own
	if !est.sampled {
		est = e.pool
	}
	if est.sampled {
		hard = min(max(est.above(e.cfg.Granularity, hardDeviations), e.cfg.Min), e.cfg.Max)
		soft = est.above(e.cfg.Granularity, e.cfg.SoftDeviations)
	} else {
		hard, soft = e.cfg.Initial, e.cfg.Min
	}
	hard = doubled(hard, int(pe.expired), e.cfg.Max)
	return min(soft, hard), hard
}

// Observe records that p answered after rtt: it moves p's estimate and the
// pool's, and ends p's back-off. An rtt below 0 counts as 0 and one above
// Max as Max, which changes no deadline (none exceeds Max) and keeps the
// arithmetic in range.
func (e *Estimator) Observe(p peer.ID, rtt time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rtt = min(max(rtt, 0), e.cfg.Max)
	pe := e.peers[p]
	pe.own.observe(rtt)
	pe.expired = 0
	e.peers[p] = pe
	e.pool.observe(rtt)
}

// Expired records that a request to p reached its hard deadline: p's hard
// deadline doubles, up to Max, until p answers again. Its soft deadline
// stays where its estimate puts it (at most the hard one, as always).
func (e *Estimator) Expired(p peer.ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pe := e.peers[p]
	if pe.expired < maxBackoffs {
		pe.expired++
	}
	e.peers[p] = pe
}

// Forget drops what e knows of p alone (its samples stay in the pool), as
// for a peer that has disconnected for good. A peer heard of again starts
// from the pool's estimate.
func (e *Estimator) Forget(p peer.ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.peers, p)
}

// Estimate returns p's own smoothed response time and deviation, and ok
// false (with zeros) while p has answered nothing since e began or forgot
// it.
func (e *Estimator) Estimate(p peer.ID) (srtt, rttvar time.Duration, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pe := e.peers[p]
	return pe.own.srtt, pe.own.rttvar, pe.own.sampled
}

// Pool returns the smoothed response time and deviation over every sample
// of every peer, and ok false (with zeros) before the first.
func (e *Estimator) Pool() (srtt, rttvar time.Duration, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.pool.srtt, e.pool.rttvar, e.pool.sampled
}

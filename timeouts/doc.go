// Package timeouts holds what a user configures about deadlines: the
// policies that turn the response times a sender measures into the
// deadlines of its next requests, how long a request to a given peer may
// wait before it counts as slow (the soft deadline) and before it fails
// (the hard one).
//
// A Policy gives each request its deadlines: Estimator learns them from
// each peer's response times, Fixed gives every request the same ones. The
// scheduler only fires the deadlines it is given (offer.Offer.Request and
// RequestSoft take them as durations); package limit decides how many
// requests a peer may have in flight and how fast the application may
// send. This package decides only how long the deadlines should be, for
// any sender that would otherwise pass the scheduler a fixed duration.
//
// # The estimate
//
// Estimator keeps, for each peer, the estimator of TCP's retransmission
// timeout (RFC 6298, section 2): a smoothed response time SRTT and its
// smoothed deviation RTTVAR, set to R and R/2 by the first sample R and
// then moved by every later one with gains of 1/8 and 1/4. A peer's hard
// deadline is RFC 6298's RTO,
//
//	hard = SRTT + max(G, 4·RTTVAR), clamped to [Min, Max],
//
// doubled (still at most Max) for each of the peer's requests that expired
// since its last response (RFC 6298 section 5.5: without the doubling, a peer
// whose response time jumps above its deadline would never be heard in time
// again, since late responses are dropped, and its estimate could never
// catch up). Its soft deadline is a high percentile of the same estimate,
// about the 95th for response times that vary like a normal distribution,
//
//	soft = SRTT + max(G, 2·RTTVAR), at most hard,
//
// with no Min: a soft deadline that comes too early costs at most a hedged
// request, which a hedging budget caps, where a hard one that comes too
// early costs the answer.
//
// A peer with no sample of its own borrows the estimate of the pool: one
// more RFC 6298 estimator fed with every sample of every peer. Its SRTT is
// the mean response time of the network weighted by how often each peer
// answered, and its RTTVAR includes the spread between peers as well as
// within them, which is the right kind of caution for a peer we know
// nothing about. It costs O(1) per sample and per look-up, where a median of
// the peers' estimates would cost O(peers). The peer's own first sample then
// replaces the borrowed estimate (SRTT = R, RTTVAR = R/2, as RFC 6298 says
// for a first measurement) rather than being smoothed into it: the borrowed
// numbers are a guess, not a measurement of that peer. Before any sample at
// all, the hard deadline is Initial (1s by default, RFC 6298's initial RTO)
// and the soft one is Min.
//
// # Arithmetic
//
// Everything is integer time.Duration arithmetic, reproducible to the
// nanosecond; divisions truncate toward zero as Go's do. Samples are
// clamped to [0, Max] before they are used, which cannot change a deadline
// (no deadline exceeds Max) and keeps SRTT and RTTVAR in [0, Max]; with Max
// at most MaxDeadline, no sum or product here can overflow.
//
// Fixed is the other Policy: the same deadlines for every peer, whatever
// was measured, for senders (and experiments) that want a fixed timeout.
package timeouts

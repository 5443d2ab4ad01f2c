// Package limit holds the pure building blocks of the scheduler's traffic
// control: how many requests one peer may have in flight (Limiter, with
// Fixed and Vegas), how fast the whole application may send (Bucket, a
// token bucket), how fast one peer accepts messages in its own units (Rate,
// kept by a Pacer, which charges each message what it costs), and how many
// requests each class of traffic may have in flight (Classes, a tree of
// concurrency limits, and Pass, one scheduling pass over priorities that
// books them).
//
// Everything here is plain data: no goroutines, no clock, no locks. Time is
// an input, given as a time.Duration offset from an epoch the caller chooses
// (as in package timeouts), so every formula is checked against tables of
// exact values. None of these types is safe for concurrent use unless its
// documentation says so; the scheduler guards them with its own locks.
//
// # Why Vegas
//
// A request to a peer takes at least a floor of time (the network path plus
// the peer's service time) and, once the peer has more requests than
// workers, also the time it waits in the peer's queue. Queueing shows as RTT
// above the floor long before the peer drops anything. We compared four
// ways to turn that into a concurrency limit:
//
//   - AIMD (Netflix concurrency-limits, TCP Reno) reacts to drops and
//     timeouts only. Against a peer with a deep queue it grows until the
//     queue overflows, so the peer's queueing delay is as large as its queue
//     allows: the overload we want to avoid.
//   - Gradient2 (Netflix) compares a short RTT average with a long
//     exponential average. Under sustained load the long average drifts up
//     to the loaded RTT, so a standing queue becomes the new normal; it is
//     built for servers whose "unloaded" latency is noisy, not for a floor.
//   - Envoy's gradient controller compares a percentile of sampled RTTs
//     with a minimum RTT that it re-measures by pinning concurrency to a
//     small value for a while; it works in time windows and needs a timer,
//     and the pinning costs throughput on every peer at every interval.
//   - geth's msgrate measures items per second per peer and sizes requests
//     to hit a target RTT. It answers "how big should a request be", not
//     "how many requests at once", and its target RTT is shared by all
//     peers rather than derived from each peer's own floor.
//
// Vegas (TCP Vegas, as Netflix adapted it to request concurrency) compares
// each peer's RTT with that peer's own floor, and by Little's law turns the
// excess into a number of queued requests: Q = L·(1 − floor/RTT) for a limit
// L. Holding Q between Alpha and Beta (half a request and one and a half by
// default) keeps the peer's workers busy (a request usually waiting when a
// worker frees) while bounding the queueing delay we cause at about Beta
// service times per worker, whatever the peer's size: a peer ten times
// larger simply settles at a limit ten times larger. (TCP Vegas counts
// packets, and holds 1 to 3 of them; a request here can cost a peer tens of
// milliseconds, so each one queued is worth avoiding, and the band is
// fractional.) Timeouts and failures still cut the limit, by a quarter,
// because a peer that drops is overloaded no matter what the RTT said; they
// are a weaker signal here than in TCP, since on a peer-to-peer network a
// request is also lost to faulty peers, which do not want a smaller limit.
//
// Our Vegas differs from Netflix's in four ways, each for a reason given on
// the type: it decides once per round (about one RTT) on the round's
// smallest RTT rather than on every sample, so one slow response does not
// move it and a change is judged only on samples sent after it; in slow
// start it also checks the round's mean RTT, because a sender that refills
// channels in bursts meets a queue that drains every round, which the
// smallest RTT cannot see while the limit doubles; it cuts straight to the
// pipe estimate plus Beta rather than by one, so an overshoot from slow
// start is undone in one round; and it re-measures the floor after draining
// its own queue, rather than resetting it to whatever the next sample says,
// so the standing queue never creeps into the floor.
package limit

// Package hedge is the library's hedging: asking a second peer for what a
// first is slow to answer, and taking whichever answer comes first. It
// cuts the tail of response times for a little more traffic, as long as
// that little is bounded.
//
// # The Hedger
//
// A Hedger sends a sender's requests through the scheduler with two
// deadlines (offer.Offer.RequestSoft; package timeouts says how long each
// should be). A request answered before its soft deadline costs nothing
// more. At its soft deadline the scheduler reports it slow, and the
// Hedger, if its Budget allows, schedules a one-shot sender of its own
// (the hedge) that sends the same message to a channel of any other peer,
// best first, with the same hard deadline from its own send. The hedge is
// scheduled avoiding the slow peer (offer.Options.Avoid), so the scheduler
// offers it only other peers' channels; while only the slow peer has open
// channels it waits in the queue, keeping its place. The first
// answer, from either peer, goes to the request's receiver, and the other
// request is withdrawn (or the waiting hedge, whose token is refunded). A
// failure waits for the other request, if one may still answer; when both
// have failed the receiver is told the last failure. So the receiver gets
// one call per request, as the scheduler promises (promise 2), under the
// call's CallID, the one Send returned, which names the call for its whole
// life, whatever request IDs the scheduler reuses meanwhile.
//
// The soft deadline decides what the budget buys. One that a share b of
// the requests pass, with a budget of b, spends the budget on the body of
// the response times, and the stragglers the hedging is for find it
// empty; one that fewer pass keeps it for them. In the tail experiment
// (BENCHMARKS.md: a log-normal body, 1% of responses 50 times slower, the
// default 5% budget), the estimator's default soft deadline,
// SRTT + 2·RTTVAR, left p99.9 at 233 ms, and four deviations
// (timeouts.EstimatorConfig.SoftDeviations) brought it to 108 ms, for 4%
// extra requests.
//
// A receiver that implements Receiver decides, at each soft deadline,
// whether the request is hedged at once or later (Hedger.Hedge), and is
// told where each hedge went: a bulk sender hedges only at the end of its
// job, say, when its channels have nothing else to carry.
//
// # The budget
//
// How many requests may be hedged is a Budget: a token budget in the
// manner of gRPC's retry throttling, in which every request sent earns a
// fraction of a token, every hedge spends a whole one, and unspent tokens
// are saved only up to a cap. At any moment the hedges sent are at most
//
//	Burst + ⌊PerThousand · requests / 1000⌋
//
// (5% of the requests by default, plus a burst of 10), however the requests
// and the hedges interleave. The cap only lowers that: it keeps a long quiet
// spell from funding a storm of hedges all at once, which is what a budget
// meant for a long-lived node needs; a sender that hedges only at the end of
// a finite job raises it, so that what the job earned is there at its end.
//
// Tokens are counted in thousandths, so the arithmetic is exact integer
// arithmetic, and a Budget's state depends only on the sequence of calls
// made to it. A Budget reads no clock and takes no lock; a Hedger guards
// the one it owns with its own.
package hedge

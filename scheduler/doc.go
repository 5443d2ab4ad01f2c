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
//   - No method waits for callbacks, except Shutdown and Call, which say
//     so. A method may call the host's Peer.ID and a peer's limit.Limiter,
//     which must return quickly (see limit.Limiter).
//     A method changes the scheduler's state before it returns (a sender is
//     queued or withdrawn, a response is accepted or dropped, a peer is
//     gone) and queues the callbacks that follow; it never deadlocks,
//     whoever calls it. Call, which sends one request and waits for its
//     answer (under a context.Context), must not be called inside a
//     callback: it would wait for itself until its context ends.
//   - Callbacks never run while the scheduler holds a lock. (A peer's
//     limit.Limiter, which is not a callback, runs under the lock.)
//   - Callbacks run one at a time, in the order they were queued: sender and
//     receiver callbacks never run concurrently with each other or with one
//     another. They run on a goroutine the scheduler starts when there is work
//     and ends a few microseconds after there is none, so a host goroutine
//     that calls Deliver or Disconnect only records what happened and
//     returns; it never runs other components' code. Work that arrives back
//     to back is handed over in batches: the goroutine takes every callback
//     queued when it looks, and one that is running or lingering is not
//     started again. The host's Peer.Send runs on whichever goroutine sends
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
// Four controls decide how much is sent, on top of the offers' fairness;
// none of them fails a message for want of room: a sender simply waits its
// turn. (One race remains: a send on a listed channel whose peer's limit
// fell while the offer was open fails with offer.ErrPeerAtLimit and, like
// any failed send, parks a sender that sent nothing else; Call waits for
// the next offer instead.)
//
//   - Each peer has a limit on its messages in flight: fixed (Connect) or
//     adaptive (ConnectWith; a limit.Vegas by default, fed with the answers,
//     timeouts and refusals of the peer's requests: a host that learns a
//     peer turned a request away, overloaded, tells the scheduler with
//     Refuse). A peer's channels are only open below its current limit.
//   - A peer may be paced (ConnectWith with peer.Options.Rate): it is
//     offered no channel whose message would take it over its rate, each
//     message costing the rate's Cost or what its sender declares
//     (offer.Options.Cost).
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
// best first: the peers with the fewest messages in flight first, whatever
// their limits, then the fastest, where smoothed
// response times within a factor of two may count as equal (they do when
// they fall in one octave of a grid that Config.RankSeed shifts: two times
// a ratio ρ < 2 apart count as different under a share log2 ρ of the seeds,
// and a ratio of 2 or more always does). Equal peers take turns: first
// those not yet sent to, in an order drawn from Config.RankSeed (a hash of
// the peer's ID and the seed), then the one sent to least recently.
// Schedulers with different seeds, seeing the same peers alike, therefore
// start on different peers; left at 0, the seed is drawn at random by New,
// so that nodes differ by default.
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
// guards the queue of callbacks to run. On 8 or more processors (GOMAXPROCS
// when the Scheduler is made) an answer (Deliver, Refuse) first queues on a
// fourth lock, which guards nothing, so that answers from many goroutines
// wait there rather than on the offers lock that every offer needs. Build
// with the tag "lockorder" to have every acquisition checked.
package scheduler

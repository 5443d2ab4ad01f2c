// Package overlay simulates a whole overlay catching up to a new ledger:
// N nodes in a random graph of degree D, a few seeders holding the ledger
// at the start, and every other node fetching it from its neighbours with
// its own scheduler and fetch (fetch.Run through a scheduler.Scheduler with
// adaptive limits or fixed channels, the fetch.Peerset it replaces, or
// fetch.Rippled, rippled's own acquisition).
// Every node serves what it holds, partial subtrees included, so the
// ledger spreads as it arrives; serving nodes have finite capacity
// (simnet's ServiceQueue: workers, service times, a bounded queue that
// drops or refuses what it cannot hold). Run reports, for the strategy it
// is given, when 50%, 99% and 100% of the fetching nodes held the verified
// ledger, the serving nodes' worst queueing delay, peak load and drops, bytes sent,
// duplicate objects received, and Jain's fairness index of the completion
// times. Every serving node limits each neighbour as a rippled peer does
// (package resource: fees, warnings, cuts and refused redials, queries
// dropped for a long answer queue, the reply cap; see Config.LimitsOff), and
// the Result counts the warnings and cuts. Command overlaysim runs it.
//
// # Determinism
//
// Everything runs in virtual time on one goroutine, the driver's: a
// virtual clock keeps every timer and network event in one queue ordered by
// (time, order armed) and runs them one at a time, jumping from each to the
// next. Schedulers run their callbacks inline (Config.InlineCallbacks) with
// a RankSeed drawn from the seed; each fetch's own goroutine runs only
// while the driver waits for it (when it starts, until it has sent its
// first requests, and when it ends). The same Config therefore gives the
// same Result, to the nanosecond; only wall time differs.
//
// The clock supports what the scheduler and fetch use: Now, AfterFunc
// (a scheduler's one timer, which it re-arms with Reset, runs when the
// scheduler's NextWake says it is due; see clock.go) and Ticker, whose
// tickers never tick. So a fetch's Progress and stall check do not run;
// a fetch that cannot finish runs until Config.TimeLimit and is reported
// incomplete.
//
// # Memory
//
// Ledger nodes are immutable and named by their hash, so the whole
// simulation shares one copy of the ledger, and each node keeps only a
// bitset of the nodes it holds. What a fetching node costs beyond that is
// its scheduler and its fetch's bookkeeping, freed when it completes:
// about 55 kB at the peak for ledger 40000. Ten thousand nodes fit in
// 1.2 GB (cmd/overlaysim collects at GOGC 40 to keep them there).
package overlay

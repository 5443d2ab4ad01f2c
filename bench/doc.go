// Package bench measures a request's life in the scheduler against two
// other implementations of the same workload, side by side in one run:
//
//   - floor: the least work a request's life needs: IDs from a slab
//     (generation<<32 | slot+1) whose slots hold the deadlines too (the
//     scheduler's slab.Slab), one mutex; no offers, no senders, no
//     callbacks queue.
//   - naive: what a Go developer writes by hand: a mutex, a
//     map[id]*request, a time.AfterFunc per request stopped on completion,
//     a completion callback, and per-peer counts of requests in flight.
//   - scheduler: the real library: a sender scheduled and offered, a
//     request sent on a channel, the response delivered, the receiver
//     called, and the channel reopened and offered to the next sender.
//
// The package holds these three-way benchmarks, the scheduler's scaling
// and hand-off benchmarks, and tests that each harness does the work it is
// measured on and that a request's life allocates at most once. See BENCHMARKS.md at the
// repository root for how to run and read them.
package bench

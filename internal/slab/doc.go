// Package slab holds the deadlines of every pending message in one
// structure that fires them in an exact, reproducible order.
//
// A Slab is plain data: it has no goroutines, reads no clock and takes no
// locks. Times are time.Duration offsets from an epoch the caller chooses;
// the caller arms a single timer for Next and, when it fires, calls PopDue
// until it reports nothing due.
//
// Deadlines fire in order of (deadline, time armed, order of arming). With a
// clock that never goes backwards that is (deadline, order of arming). The
// tie-break matters: mock clocks fire timers with equal deadlines in an
// unstable order, so the scheduler cannot rely on one timer per message to
// be deterministic. (Between deadlines that saturated at math.MaxInt64 and
// were armed at the same instant with different durations, the shorter
// duration fires first.)
//
// Design: deadlines are grouped into lanes by their duration (`after`).
// With a non-decreasing `now`, appending to a lane keeps it sorted, so
// arming and disarming are O(1) list operations. A small indexed min-heap
// over the lane heads yields the global earliest; it holds one element per
// distinct duration in use, usually one to three.
//
// Invariants of a Slab, holding between calls:
//   - Every armed node is in exactly one lane, whose list is sorted by
//     (deadline, time armed) and, among equal keys, by order of arming,
//     because a node is placed after every node that does not come after it.
//   - heap holds exactly the non-empty lanes, each with lanes[l].pos equal
//     to its index, in min-heap order of their head's key. So heap[0]'s head
//     is the global minimum.
//   - byAfter maps a duration to its lane for exactly the non-empty lanes.
//     Free lane records have head == none and sit on freeLanes.
//   - A node is armed iff lane >= 0, held iff lane != freed. Free nodes are
//     chained through next from freeNode; retired nodes (generation
//     exhausted) are freed and on no list.
//   - armed and used count the armed and held nodes.
package slab

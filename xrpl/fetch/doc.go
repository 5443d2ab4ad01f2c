// Package fetch downloads a whole ledger (package ledger) from its root hash,
// asking connected peers for batches of node hashes and checking every node
// it receives against its hash before trusting it.
//
// Three strategies share the same bookkeeping (the frontier of hashes still to
// fetch, the checks, the counters and the Report):
//
//   - Run fetches through a scheduler.Scheduler. One bulk sender takes every
//     channel an offer allows, puts a batch of hashes (a ledger.GetObjects) on
//     each, and schedules a continuation while work remains. With fewer
//     hashes waiting than channels offered, the fastest idle peers get
//     them first, whatever their recent failures: a ledger's chain of
//     single-child nodes is fetched a level per round trip. Each request
//     declares that it expects a ledger.Objects, so the scheduler refuses
//     any other response and the request waits for its right one (or its
//     deadline). Failed requests (timeout, disconnect, refusal) and missing
//     or bad objects are asked again, preferring a peer other than the one
//     that failed them. Each request's deadlines come from the library's timeout
//     policy (package timeouts: the hard one is its peer's RFC 6298 timeout
//     within [MinTimeout, Timeout], the soft one its peer's p95-like
//     response time). Every request goes through the library's
//     hedge.Hedger: at the tail, when nothing waits to be asked, a request
//     past its soft deadline is hedged, asked again of another peer by the
//     Hedger's own sender, as far as its budget allows (5% of the requests
//     by default), never of a peer the fetch's judge benches or has judged
//     useless when the hedge is asked for; the first answer wins and the
//     other request is withdrawn. The fetch decides only when a slow request is worth a
//     hedge (at the tail); the scheduler says when it is slow, and the
//     Hedger sends the hedge and picks the answer.
//   - Peerset is the pattern the scheduler replaces, kept for comparison: a
//     fixed set of two peers, widened by one only after a request times out
//     or a peer of the set strikes out (see Peerset),
//     with its own request IDs and its own timer per request, sending straight
//     to peer.Peer.Send.
//   - Rippled is rippled's own acquisition (InboundLedger and its PeerSet),
//     kept as the baseline to beat: 5 peers, 3 more after each 3s without
//     progress, 12 hashes a request blind and 128 after a useful reply, one
//     request per peer at a time, giving up at the seventh interval without
//     progress (see Rippled and RippledConfig).
//
// Run and the Peerset judge every answer by what it holds (package penalty, set by
// Config.Penalty): a peer whose answer is mostly missing or corrupt objects
// is benched, getting no request until a back-off with jitter ends (Run's
// sender is scheduled avoiding it, so its idle channels do not fill the
// offers), which
// doubles with each such answer in a row, up to a cap. A peer that only
// lacks objects is never dropped for it: it may be behind (in an overlay
// catching up, it holds them a moment later), and on this wire it cannot be
// told from one that serves another ledger, so it is asked again each time
// its bench ends, and a peer that has lacked every object asked of it is
// named in Report.Lacking and the IncompleteError. After a threshold of
// such answers in a row, if most objects a peer sent were corrupt (it lies),
// it is useless: it gets nothing more, is named with the reason in
// Report.Useless and the IncompleteError, and is handed to
// Config.Disconnect for the host to disconnect. So a peer with nothing for
// the root costs a request per back-off, not one per round trip.
//
// All three finish when every node reachable from the root has arrived and
// verified, or fail with an *IncompleteError that says how much is missing
// and why (or, when every node verified but a Write to Config.Store failed,
// with that Write's error). Given a Base (the nodes of an earlier ledger, say), each one
// fetches only what the base lacks: it skips every subtree whose root hash
// the base holds, as a node catching up from ledger to ledger does.
//
// Given a Store (a NodeStore: MemStore, or one on disk such as package
// nodestore/pebblestore), each one writes every node it verifies there,
// in batches, from a goroutine of its own, parents before children; and a
// fetch given a Store that an earlier fetch of the same root left
// half-full (stopped, or killed at any moment) resumes: it walks the tree
// the Store holds from the root and asks only for what it lacks. A stored
// value that does not hash to its name is fetched again.
//
// The fetch's own memory does not grow with the ledger: it remembers the
// hashes waiting and in flight, not those verified, and once enough wait
// it walks the tree depth first, finishing the subtrees it has begun.
//
// None imports a transport: the host wires its connections (a
// simnet.Network, a tcpnet.Client) to a Host, which is the Scheduler for Run
// and the Peerset or the Rippled itself for the others; a transport whose wire can
// say "busy" hands the peers' refusals to the Host too (see Refuser).
package fetch

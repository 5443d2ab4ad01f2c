// Package node runs several components of one XRP Ledger node side by
// side, to show what only a central scheduler can do for them: the bulk
// ledger fetch (package fetch), lookups (single state entries asked at a
// steady rate, as an RPC server answering "what is in account X" asks its
// peers, and waited for by a client) and relay (small notifications sent
// to every peer at a steady rate, as transaction relay sends them).
//
// It builds the node two ways, over the same peers:
//
//   - On one scheduler (OnScheduler): each component is a sender of its own at its
//     own priority (PriorityLookup above PriorityRelay above PriorityFetch),
//     so an urgent lookup takes the next channel that opens, ahead of the
//     bulk fetch, and the scheduler's Config.Budget caps the node's traffic
//     as a whole, shared in priority order, with the starvation bound of
//     Config.PassOverLimit keeping the fetch going. Every peer's own rate
//     (peer.Options.Rate) is kept by the scheduler over every component's
//     traffic together, each message charged what it costs the peer: a
//     query (the fetch's, a lookup) the rate's Cost, a notification the
//     trivial fee its sender declares (NoticeCost).
//   - The old way (NewRouter): each component with its own set of peers,
//     its own request IDs and its own timer per request, sending straight
//     to the peers, with no cap over the node as a whole and no idea of
//     what the others send. The Router hands each component the
//     connections and the answers under its IDs.
//
// Each component measures itself and says so in a ComponentReport: its
// priority, the requests it sent, the p50 and p99 of its latency (from
// the moment it wanted to send to its answer), the time it waited in the
// scheduler's queue, and its throughput.
package node

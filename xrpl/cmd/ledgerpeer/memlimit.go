package main

import "github.com/peersched/peersched/xrpl/internal/memlimit"

// clientsHeadroom is what clients may make a server hold beyond its ledger,
// by tcpnet's limits' arithmetic (about 130 MB with the defaults), rounded
// up: the connections' buffers and request frames, the lists of the replies
// waiting, and the replies being written.
const clientsHeadroom = 160 << 20

// limitMemory sets the Go runtime's soft memory limit to the heap the
// ledger left, once built, plus clientsHeadroom, unless GOMEMLIMIT says
// otherwise, and returns the limit (0 if none was set). What clients can
// make the server hold is bounded (tcpnet.ServerLimits), but a heap that the
// collector lets double between collections still doubles the process's
// memory under an attack's churn of requests decoded and replies encoded;
// the limit makes the collector run sooner instead. It is soft: the heap a
// server needs is never refused, only collected harder (package memlimit).
func limitMemory() int64 { return memlimit.SetAboveLive(clientsHeadroom) }

package simnet

import (
	"time"

	"github.com/peersched/peersched/xrpl/resource"
)

// Stats counts what happened to one peer's traffic. Every count only grows.
type Stats struct {
	Requests      int // requests Send accepted
	Notifications int // notifications (request ID 0) Send accepted and ignored
	Refused       int // Sends that failed: peer down or unsupported message
	Lost          int // requests dropped by Profile.Loss
	Missing       int // requested objects left out of answers

	Faults FaultCounts // requests that got each fault

	Answers   int // responses scheduled (a Duplicate counts two), refusals included
	Delivered int // responses handed to Deliver, and refusals to Refuse
	Refusals  int // of Delivered, the refusals (Config.Refuse)
	Dropped   int // responses and refusals lost because the peer disconnected first

	Disconnects int // outages and cuts for charges
	Reconnects  int // outages' ends and the host's redials that were let in

	// Rippled's limits (see Peer). Resources is the peer's accounts of the
	// host: its charges, warnings, the connections it cut for their
	// charges (Drops), the host's redials it refused while the balance
	// stayed at the drop threshold (Refused), and the highest balance.
	Resources resource.Stats
	BusyDrops int // requests dropped unanswered: resource.DropSendQueue answers were queued
	Truncated int // answers cut to resource.MaxReplyObjects objects
	Skipped   int // wire.Frame messages of types the peer does not decode, sent under a request ID, skipped at no charge
	Useless   int // replies and pongs sent to the peer, charged resource.FeeUselessData
	Redials   int // the host's redials after a cut, refused ones included

	// Profile.Service only; all zero for a peer without one.
	Served        int           // requests admitted to the queue (served at once or after waiting)
	Overflowed    int           // requests turned away by a full queue (dropped or rejected, as Service.Overflow says)
	QueueDelay    time.Duration // total time the served requests waited for a worker
	MaxQueueDelay time.Duration // the longest any of them waited
}

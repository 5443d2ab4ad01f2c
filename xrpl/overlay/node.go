package overlay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/simnet"
)

// node is one simulated overlay node: a server of what it holds to its
// neighbours and, unless it is a seeder, a fetch of the ledger from them.
// Every field is touched only by the driver's goroutine, or by the node's
// fetch goroutine while the driver waits for it.
type node struct {
	index      int32
	id         peer.ID
	seeder     bool
	neighbours []int32
	latency    []time.Duration // one way, to each neighbour
	holds      holdings
	held       int

	// Serving.
	queue       *simnet.ServiceQueue
	served      int // requests admitted to the service queue
	dropped     int // requests turned away by a full queue
	worstWait   time.Duration
	peakWaiting int
	bytesSent   int64              // object bytes in its answers
	accounts    *resource.Accounts // of each neighbour that asks it, by node ID
	busyDrops   int                // queries dropped for a long send queue

	// Fetching.
	fetching   bool // its fetch is running: deliveries go to host
	host       fetch.Host
	sched      *scheduler.Scheduler  // nil for the peer set and rippled
	clock      *nodeClock            // the fetch's
	schedClock *nodeClock            // its scheduler's, which wakes it by its NextWake
	connect    func(peer.Peer) error // connects a neighbour's link to its host
	cancel     context.CancelFunc
	ran        chan struct{} // closed when its fetch has returned
	report     fetch.Report
	err        error
	completed  bool
	doneAt     time.Duration
	received   int // objects delivered to it, duplicates included
	duplicates int // of which it already held
}

// link is a node's connection to one neighbour, as the node's scheduler
// (or peer set) sees it: sending on it reaches the neighbour's service
// queue one latency later.
type link struct {
	sim      *simulation
	from, to *node
	latency  time.Duration
	// queued counts to's answers on the link that are scheduled and not
	// yet delivered: its send queue. cut says to has cut the link off for
	// from's charges; what was in flight on it is lost, and from redials
	// with a new link.
	queued int
	cut    bool
}

var _ peer.Peer = (*link)(nil)

// errNotObjects is what a link answers to a message other than a
// ledger.GetObjects request.
var errNotObjects = errors.New("overlay: a node serves only ledger.GetObjects requests")

func (l *link) ID() peer.ID { return l.to.id }

// Send queues the request's arrival at the neighbour; it never calls back.
func (l *link) Send(id peer.RequestID, message any) error {
	if id == 0 {
		return nil // a notification: nothing to serve
	}
	req, ok := ledger.AsGetObjects(message)
	if !ok {
		return fmt.Errorf("%w, not %T", errNotObjects, message)
	}
	l.sim.clock.at(l.latency, func() { l.sim.arrive(l, id, req.Hashes) })
	return nil
}

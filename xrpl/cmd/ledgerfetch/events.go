package main

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// peerEvents counts, by peer, the faults -chaos injected and the
// connections and disconnections the host saw, in one place, so that a
// report taken from it (snapshot) shows the two agree. It is safe for
// concurrent use.
type peerEvents struct {
	mu      sync.Mutex
	byPeer  map[peer.ID]*peerCounts // guarded by mu
	changed chan struct{}           // guarded by mu: closed, and replaced, at every disconnection
}

// peerCounts is one peer's events.
type peerCounts struct {
	Kills          int `json:"kills"`                     // -chaos took it down
	Restarts       int `json:"restarts"`                  // -chaos brought it back
	FailedRestarts int `json:"failed_restarts,omitempty"` // -chaos could not bring it back (its port was taken): it stays down
	Disconnections int `json:"disconnections"`            // the host saw it disconnect (a kill, or its own drop)
	// Reasons counts, by reason, why its TCP connections ended and its
	// dials failed (tcpnet.Reason: "frame over the cap", "peer closed",
	// "idle timeout", "dial failed"...).
	Reasons     map[string]int `json:"disconnect_reasons,omitempty"`
	connections int            // the host saw it connect
	unknown     int            // frames of types we do not decode, skipped (see said)
}

func newPeerEvents() *peerEvents {
	return &peerEvents{byPeer: map[peer.ID]*peerCounts{}, changed: make(chan struct{})}
}

// peerLocked returns id's counts, created if need be.
func (e *peerEvents) peerLocked(id peer.ID) *peerCounts {
	c := e.byPeer[id]
	if c == nil {
		c = &peerCounts{}
		e.byPeer[id] = c
	}
	return c
}

func (e *peerEvents) connected(id peer.ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.peerLocked(id).connections++
}

func (e *peerEvents) disconnected(id peer.ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.peerLocked(id).Disconnections++
	close(e.changed)
	e.changed = make(chan struct{})
}

// ended counts why one of id's connections ended, or a dial failed.
func (e *peerEvents) ended(id peer.ID, why tcpnet.Reason) {
	if why == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.peerLocked(id)
	if c.Reasons == nil {
		c.Reasons = map[string]int{}
	}
	c.Reasons[string(why)]++
}

// skipped counts a frame of a type we do not decode that id sent.
func (e *peerEvents) skipped(id peer.ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.peerLocked(id).unknown++
}

// unknownFrames returns, by peer, the frames skipped for their type.
func (e *peerEvents) unknownFrames() map[peer.ID]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[peer.ID]int{}
	for id, c := range e.byPeer {
		if c.unknown > 0 {
			out[id] = c.unknown
		}
	}
	return out
}

func (e *peerEvents) killed(id peer.ID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.peerLocked(id).Kills++
}

// restarted counts a restart of id, which failed if err is not nil.
func (e *peerEvents) restarted(id peer.ID, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		e.peerLocked(id).FailedRestarts++
		return
	}
	e.peerLocked(id).Restarts++
}

// everConnected reports whether the host has seen id connect.
func (e *peerEvents) everConnected(id peer.ID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	c := e.byPeer[id]
	return c != nil && c.connections > 0
}

// live returns, of ids, those connected to the host now.
func (e *peerEvents) live(ids []peer.ID) []peer.ID {
	e.mu.Lock()
	defer e.mu.Unlock()
	var up []peer.ID
	for _, id := range ids {
		if c := e.byPeer[id]; c != nil && c.connections > c.Disconnections {
			up = append(up, id)
		}
	}
	return up
}

// settleTimeout bounds how long snapshot waits for the host to see the
// last kills.
const settleTimeout = 2 * time.Second

// snapshot returns every peer's counts at a moment when the host has seen
// every kill injected so far as a disconnection: a kill reaches the host a
// moment after it is made (a TCP connection's reader sees it end), so
// snapshot waits for that, at most settleTimeout. It returns nil if
// nothing happened to any peer.
func (e *peerEvents) snapshot() map[string]peerCounts {
	deadline := time.NewTimer(settleTimeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		settled := true
		for _, c := range e.byPeer {
			settled = settled && c.Disconnections >= c.Kills
		}
		changed := e.changed
		if settled {
			defer e.mu.Unlock()
			return e.countsLocked()
		}
		e.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.countsLocked()
		}
	}
}

// countsLocked copies the counts of the peers that something happened to.
func (e *peerEvents) countsLocked() map[string]peerCounts {
	var out map[string]peerCounts
	for id, c := range e.byPeer {
		if c.Kills+c.Restarts+c.FailedRestarts+c.Disconnections+len(c.Reasons) == 0 {
			continue
		}
		if out == nil {
			out = map[string]peerCounts{}
		}
		cp := *c
		cp.Reasons = maps.Clone(c.Reasons)
		out[string(id)] = cp
	}
	return out
}

// sortedPeers returns the keys of counts, sorted.
func sortedPeers(counts map[string]peerCounts) []string {
	return slices.Sorted(maps.Keys(counts))
}

package node

import (
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/peersched/peersched/peer"
)

// Meter counts every message the node sends, over every peer and every
// component, by the time it was sent, to show what a budget held the node
// to (BusiestSecond). Wrap each peer with Peer before the node sees it. It
// is safe for concurrent use; the zero value is not usable: use NewMeter.
type Meter struct {
	clock clock.Clock

	mu    sync.Mutex
	sends []time.Time // guarded by mu: the time of every send the peer took
}

// NewMeter returns a Meter that reads the time from clk.
func NewMeter(clk clock.Clock) *Meter { return &Meter{clock: clk} }

// Peer returns p, counting each message its Send takes in m.
func (m *Meter) Peer(p peer.Peer) peer.Peer { return meteredPeer{Peer: p, m: m} }

type meteredPeer struct {
	peer.Peer
	m *Meter
}

func (p meteredPeer) Send(id peer.RequestID, message any) error {
	if err := p.Peer.Send(id, message); err != nil {
		return err
	}
	p.m.mu.Lock()
	p.m.sends = append(p.m.sends, p.m.clock.Now())
	p.m.mu.Unlock()
	return nil
}

// Sent returns how many messages the peers took.
func (m *Meter) Sent() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sends)
}

// BusiestSecond returns the most messages sent within any window of one
// second, [t, t+1s), over the whole run: what a budget of N a second with
// a burst of B must keep at or below N + B.
func (m *Meter) BusiestSecond() int {
	m.mu.Lock()
	s := slices.Clone(m.sends)
	m.mu.Unlock()
	return busiest(s, time.Second)
}

// busiest returns the most of the times in sends (in order, as they were
// taken) that fall within one window [t, t+window).
func busiest(sends []time.Time, window time.Duration) int {
	most, lo := 0, 0
	for hi := range sends {
		for !sends[hi].Before(sends[lo].Add(window)) {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	return most
}

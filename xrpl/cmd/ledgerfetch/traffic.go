package main

import (
	"sync"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/penalty"
	"github.com/peersched/peersched/xrpl/tcpnet"
	"github.com/peersched/peersched/xrpl/wire"
)

// trafficMeter adds up, by peer and over all its connections, the bytes
// each peer sent under a request ID, split by whether the host took them:
// what the fetch judges peers' traffic by (fetch.Config.Traffic). It is
// safe for concurrent use.
type trafficMeter struct {
	mu     sync.Mutex
	byPeer map[peer.ID]penalty.Traffic // guarded by mu
}

func newTrafficMeter() *trafficMeter {
	return &trafficMeter{byPeer: map[peer.ID]penalty.Traffic{}}
}

// count is a tcpnet.ConnConfig.Traffic: a frame of bytes from a peer that
// the host took (deliverErr nil) or refused.
func (m *trafficMeter) count(from peer.ID, bytes int, deliverErr error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.byPeer[from]
	if deliverErr == nil {
		t.Wanted += int64(bytes)
	} else {
		t.Unwanted += int64(bytes)
	}
	m.byPeer[from] = t
}

// totals returns a copy of every peer's totals.
func (m *trafficMeter) totals() map[peer.ID]penalty.Traffic {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[peer.ID]penalty.Traffic, len(m.byPeer))
	for id, t := range m.byPeer {
		out[id] = t
	}
	return out
}

// clientConfig is the tcpnet Client of a fetch: its peers' traffic counted
// in meter, why each connection ended in events, redials jittered from the
// run's seed, and silent peers dropped after -answer-timeout.
func clientConfig(o options, events *peerEvents, meter *trafficMeter) tcpnet.ClientConfig {
	return tcpnet.ClientConfig{
		Channels: o.peerChannels(),
		Seed:     o.seed,
		Conn: tcpnet.ConnConfig{AnswerTimeout: o.answerTimeout, Traffic: meter.count,
			Skipped: func(id peer.ID, _ wire.Type) { events.skipped(id) }},
		Ended: func(id peer.ID, why error) { events.ended(id, tcpnet.ReasonOf(why)) },
	}
}

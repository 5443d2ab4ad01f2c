package main

import (
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// adaptiveHost is a host that can let each peer's limit adapt: the
// scheduler.
type adaptiveHost interface {
	tcpnet.Host
	ConnectWith(p peer.Peer, opts peer.Options) error
}

// adaptiveLimits is a host whose every Connect gives the peer the
// scheduler's default adaptive limit (limit.Vegas within the default
// bounds), whatever channel count the transport passes.
type adaptiveLimits struct{ adaptiveHost }

func (h adaptiveLimits) Connect(p peer.Peer, _ int) error {
	return h.ConnectWith(p, peer.Options{})
}

// withLimits returns host wired for the per-peer limits o asks for: with
// -channels 0 (the default) and a host that adapts, every peer connects with
// an adaptive limit; otherwise peers connect with o.peerChannels() fixed
// channels, which the transports pass.
func withLimits(host tcpnet.Host, o options) tcpnet.Host {
	if a, ok := host.(adaptiveHost); ok && o.channels == 0 {
		return adaptiveLimits{a}
	}
	return host
}

// peerChannels is the fixed channel count transports connect peers with:
// -channels, or, when it is 0, tcpnet.DefaultChannels (what the peer set
// uses; the scheduler adapts instead, see withLimits).
func (o options) peerChannels() int {
	if o.channels > 0 {
		return o.channels
	}
	return tcpnet.DefaultChannels
}

// maxChannels is the most channels -channels may give each of peers peers:
// the scheduler's cap on requests in flight shared among them. Channels
// beyond it could never all carry a request (a send past the cap fails),
// and an offer would list channels the fetch cannot use.
func maxChannels(peers int) int {
	return scheduler.DefaultMaxRequests / max(peers, 1)
}

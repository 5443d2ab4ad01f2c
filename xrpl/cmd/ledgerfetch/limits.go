package main

import (
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// adaptiveHost is a host that can let each peer's limit adapt: the
// scheduler.
type adaptiveHost interface {
	tcpnet.Host
	ConnectWith(p peer.Peer, opts peer.Options) error
}

// limitedHost is a host whose every Connect gives the peer the options
// -channels and -rate-limits ask for: the scheduler's default adaptive
// limit (limit.Vegas within the default bounds) whatever channel count the
// transport passes, or (fixed) the count it passes; and the Rate, if any.
type limitedHost struct {
	adaptiveHost
	rate  limit.Rate
	fixed bool
}

func (h limitedHost) Connect(p peer.Peer, channels int) error {
	opts := peer.Options{Rate: h.rate}
	if h.fixed {
		l, err := limit.NewFixed(channels)
		if err != nil {
			return err
		}
		opts.Limiter = l
	}
	return h.ConnectWith(p, opts)
}

// withLimits returns host wired for the per-peer limits o asks for: with
// -channels 0 (the default) and a host that adapts, every peer connects with
// an adaptive limit; otherwise peers connect with o.peerChannels() fixed
// channels, which the transports pass. With -rate-limits rippled (the
// default) and a host that adapts, every peer is also kept within
// fetch.RippledRate.
func withLimits(host tcpnet.Host, o options) tcpnet.Host {
	a, ok := host.(adaptiveHost)
	switch {
	case !ok:
		return host
	case o.channels == 0:
		return limitedHost{adaptiveHost: a, rate: o.peerRate()}
	case !o.peerRate().IsZero():
		return limitedHost{adaptiveHost: a, rate: o.peerRate(), fixed: true}
	}
	return host
}

// peerRate is the Rate -rate-limits asks each peer to be kept within:
// fetch.RippledRate, or none with -rate-limits off.
func (o options) peerRate() limit.Rate {
	if o.noRateLimits {
		return limit.Rate{}
	}
	return fetch.RippledRate
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

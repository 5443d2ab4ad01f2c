// Package peer holds what a host tells the scheduler about its peers and
// what it learns back: their identity, the small interface a host
// implements for each connection, the Options that decide a peer's limit,
// and the Usage of each peer's channels.
//
// A channel is the unit of capacity for messaging one peer: it is open when
// it may carry one message and closed while that message is being read and
// answered. A peer has a limit on its messages in flight, fixed or adaptive
// (a limit.Limiter), and open+closed = its channel count at every moment:
// its limit, or more while messages sent before its limit fell are still in
// flight. A lower limit never takes a closed channel away: the message on
// it runs to its end, and the channel then retires instead of reopening,
// until the peer is back within its limit.
package peer

import (
	"errors"
	"math"
	"time"
)

// ID names a peer. Two connections that report the same ID are the same peer
// as far as the scheduler is concerned, so at most one may be connected at a
// time; a peer that disconnects and connects again under the same ID is a new
// connection: it keeps no channel, limit, rate or request of the old one
// (its PeerStats counters go on: see scheduler.Config.KeepDepartedPeers).
type ID string

// Peer is the host's handle on one connection. The scheduler calls Send
// without holding any of its locks, from whichever goroutine is sending, so
// Send may call back into the scheduler.
type Peer interface {
	// ID returns the peer's identity. It must return the same value for the
	// lifetime of the connection.
	ID() ID

	// Send queues message for the peer and must not block on the network.
	// id is the scheduler's ID for a request, which the host hands back
	// with the response (Scheduler.Deliver takes the same type), or 0 for a
	// notification.
	// An error means the message was not queued: the scheduler then reports
	// the error to the sender, keeps the channel open, and never calls the
	// request's receiver.
	Send(id RequestID, message any) error
}

// RequestID names one outstanding request. The scheduler gives it to the
// host with the message (Peer.Send), the host hands it back with the
// response (Scheduler.Deliver, Scheduler.Refuse), and the request's
// receiver is told it. Without scheduler.Config.RequestIDs a scheduler
// never issues an ID twice; with a range, an ID is issued again once its
// request has ended (Config.RequestIDs says how long it waits first). IDs are never zero, so a zero ID
// on the wire can mean "not a request" (a notification). It lives here,
// with the Peer interface, because it crosses the host boundary both ways.
type RequestID uint64

// MaxChannelsPerPeer is the most channels one peer may have. Counts are kept
// in 32 bits to keep the per-peer record small.
const MaxChannelsPerPeer = math.MaxInt32

// Usage describes one connected peer's channels.
type Usage struct {
	ID ID
	// Channels is ChannelsOpen + ChannelsClosed: the peer's Limit, or more
	// while messages sent before its limit fell are still in flight; for a
	// peer paced by a Rate (Options.Rate), less while its rate pays for
	// fewer messages than its open channels would carry, since those
	// channels are neither open nor closed then.
	Channels       int
	ChannelsOpen   int           // channels that may carry a message now
	ChannelsClosed int           // messages in flight
	Limit          int           // the peer's current limit
	RTT            time.Duration // the peer's smoothed response time; 0 until one of its requests has been answered or has timed out
}

// Errors returned for bad input about peers, by the scheduler's Connect,
// ConnectWith and Disconnect. They can be matched with errors.Is.
var (
	// ErrNilPeer is returned when a nil Peer is connected.
	ErrNilPeer = errors.New("peersched: peer is nil")
	// ErrBadChannels is returned when a peer is connected with fewer than one channel.
	ErrBadChannels = errors.New("peersched: a peer needs at least one channel")
	// ErrAlreadyConnected is returned when a peer with the same ID is already connected.
	ErrAlreadyConnected = errors.New("peersched: peer already connected")
	// ErrUnknownPeer is returned for an ID that is not connected.
	ErrUnknownPeer = errors.New("peersched: peer not connected")
	// ErrTooManyChannels is returned when a peer asks for more channels than
	// the pool can count (see MaxChannelsPerPeer).
	ErrTooManyChannels = errors.New("peersched: too many channels for one peer")
	// ErrNilLimiter is for a peer connected with a nil Limiter where one is
	// required. The scheduler never returns it (peer.Options.NewLimiter
	// never gives nil); it is here for other users of a Limiter.
	ErrNilLimiter = errors.New("peersched: limiter is nil")
	// ErrNotThatPeer: DisconnectPeer was given a Peer other than the one
	// connected under its ID, such as an earlier connection to the same
	// peer that a newer one has replaced.
	ErrNotThatPeer = errors.New("peersched: another connection of the peer is connected")
	// ErrIncomparablePeer: DisconnectPeer was given a Peer that cannot be
	// compared with == (its dynamic type is, or its value holds, a slice,
	// map or func), so it cannot be told from another value; a pointer
	// can.
	ErrIncomparablePeer = errors.New("peersched: peer is not comparable")
)

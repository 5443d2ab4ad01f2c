// Package peer holds what the scheduler knows about connected peers: their
// identity, the small interface a host implements for each connection, and
// the accounting of each peer's channels (see Pool).
//
// A channel is the unit of capacity for messaging one peer: it is open when
// it may carry one message and closed while that message is being read and
// answered. A peer has a limit on its messages in flight, fixed or adaptive
// (a limit.Limiter), and open+closed = its channel count at every moment:
// its limit, or more while messages sent before its limit fell are still in
// flight (see Pool).
package peer

import "errors"

// ID names a peer. Two connections that report the same ID are the same peer
// as far as the scheduler is concerned, so at most one may be connected at a
// time; a peer that disconnects and connects again under the same ID is a new
// peer that inherits nothing from the old one.
type ID string

// Peer is the host's handle on one connection. The scheduler calls Send
// without holding any of its locks, from whichever goroutine is sending, so
// Send may call back into the scheduler.
type Peer interface {
	// ID returns the peer's identity. It must return the same value for the
	// lifetime of the connection.
	ID() ID

	// Send queues message for the peer and must not block on the network.
	// requestID is the scheduler's ID for a request (the receiver.RequestID
	// the host must hand back with the response), or 0 for a notification.
	// An error means the message was not queued: the scheduler then reports
	// the error to the sender, keeps the channel open, and never calls the
	// request's receiver.
	Send(requestID uint64, message any) error
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
	// ErrNilLimiter is returned when a peer is connected with a nil Limiter
	// where one is required.
	ErrNilLimiter = errors.New("peersched: limiter is nil")
)

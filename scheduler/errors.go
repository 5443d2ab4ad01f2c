package scheduler

import (
	"errors"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Every error the scheduler returns wraps one of these, so errors.Is can tell
// them apart. Most are defined in the package that detects them and repeated
// here so a user needs only this package. A call that returns an error has
// changed nothing, unless its documentation says otherwise.
var (
	// ErrStopped: the scheduler has been stopped and takes no new work.
	ErrStopped = errors.New("peersched: scheduler stopped")
	// ErrBadConfig: New was given an invalid Config.
	ErrBadConfig = errors.New("peersched: invalid config")

	ErrNilPeer          = peer.ErrNilPeer
	ErrBadChannels      = peer.ErrBadChannels
	ErrAlreadyConnected = peer.ErrAlreadyConnected
	ErrUnknownPeer      = peer.ErrUnknownPeer

	ErrNilSender      = offer.ErrNilSender
	ErrTooManySenders = offer.ErrTooManySenders
	ErrOfferExpired   = offer.ErrExpired
	ErrNoSuchChannel  = offer.ErrNoSuchChannel
	ErrChannelUsed    = offer.ErrChannelUsed
	ErrSizeExceeded   = offer.ErrSizeExceeded
	ErrPeerGone       = offer.ErrPeerGone
	ErrPeerAtLimit    = offer.ErrPeerAtLimit

	// ErrBadBounds: ConnectWith was given limit bounds that do not satisfy
	// 1 <= Min <= Start <= Max.
	ErrBadBounds = limit.ErrBadBounds
	// ErrUnknownClass: ScheduleWith named a class that Config.Classes does
	// not declare.
	ErrUnknownClass = limit.ErrUnknownClass
	// ErrBadBytes: ScheduleWith was given a negative size in
	// offer.Options.Bytes, or one above the byte budget's ByteBurst, which
	// the budget could never pay for.
	ErrBadBytes = errors.New("peersched: bad declared message size")
	// ErrBadWants: ScheduleWith was given wants that no offer could meet:
	// a negative offer.Options.MinChannels or one above
	// Config.MaxOfferChannels, or Only peers that are all in Avoid.
	ErrBadWants = errors.New("peersched: a sender's wants can never be met")

	ErrNilReceiver       = receiver.ErrNilReceiver
	ErrBadTimeout        = receiver.ErrBadTimeout
	ErrTooManyRequests   = receiver.ErrTooManyRequests
	ErrUnknownRequest    = receiver.ErrUnknownRequest
	ErrWrongPeer         = receiver.ErrWrongPeer
	ErrDuplicateResponse = receiver.ErrDuplicateResponse
	ErrLateResponse      = receiver.ErrLateResponse

	// ErrSendPanicked wraps a panic raised by the host's Peer.Send; the send
	// is treated as failed.
	ErrSendPanicked = errors.New("peersched: peer send panicked")
)

package scheduler

import (
	"errors"
	"strings"
)

// Every error a Scheduler method returns can be told apart with errors.Is.
// Each sentinel has one name, in the package that detects it; those of
// this package are below, and the others are:
//
//   - peer: ErrNilPeer, ErrBadChannels, ErrAlreadyConnected, ErrUnknownPeer,
//     ErrTooManyChannels (Connect, ConnectWith, Disconnect);
//     ErrNotThatPeer, ErrIncomparablePeer (DisconnectPeer).
//   - offer: ErrNilSender, ErrTooManySenders (Schedule); ErrExpired,
//     ErrNoSuchChannel, ErrChannelUsed, ErrSizeExceeded, ErrPeerGone,
//     ErrPeerAtLimit (sends through an offer).
//   - receiver: ErrNilReceiver, ErrBadTimeout, ErrTooManyRequests (sends);
//     ErrUnknownRequest, ErrWrongPeer, ErrDuplicateResponse,
//     ErrLateResponse, ErrWrongResponseType (Deliver and Refuse);
//     ErrBadIDRange (New). A request's failure is a receiver.Reason, an
//     error too (Call returns it).
//   - limit: ErrBadBounds and ErrBadRate (ConnectWith), ErrUnknownClass
//     (ScheduleWith), and the class errors New wraps in ErrBadConfig.
//
// Every message starts with the name of the package that made it
// ("peersched: " for this one, peer, offer and receiver; "limit: " for
// limit), once: context is added
// after the sentinel's text, never before it. A call that returns an error
// has changed nothing, unless its documentation says otherwise.
var (
	// ErrStopped: the scheduler has been stopped and takes no new work.
	ErrStopped = errors.New("peersched: scheduler stopped")
	// ErrBadConfig: New was given an invalid Config.
	ErrBadConfig = errors.New("peersched: invalid config")
	// ErrBadBytes: ScheduleWith was given a negative size in
	// offer.Options.Bytes, or one above the byte budget's ByteBurst, which
	// the budget could never pay for.
	ErrBadBytes = errors.New("peersched: bad declared message size")
	// ErrBadCost: ScheduleWith was given a negative cost in
	// offer.Options.Cost, or one above the Burst of a connected paced
	// peer (or above limit.MaxBurst), which that peer could never pay; or
	// ConnectWith was given a peer.Options.Rate whose Burst is below a
	// cost a sender has declared.
	ErrBadCost = errors.New("peersched: bad declared message cost")
	// ErrBadWants: ScheduleWith was given wants that no offer could meet:
	// a negative offer.Options.MinChannels or one above
	// Config.MaxOfferChannels, or Only peers that are all in Avoid.
	ErrBadWants = errors.New("peersched: a sender's wants can never be met")
	// ErrSendPanicked wraps a panic raised by the host's Peer.Send; the send
	// is treated as failed.
	ErrSendPanicked = errors.New("peersched: peer send panicked")
	// ErrLimiterPanicked: ConnectWith's first read of the peer's
	// limit.Limiter (its Limit) panicked, so the peer has no limit to
	// start from and is not connected. The panic is logged and counted,
	// as every recovered panic is.
	ErrLimiterPanicked = errors.New("peersched: peer's limiter panicked")
)

// prefix begins the message of every error this package and peer, offer
// and receiver make.
const prefix = "peersched: "

// withoutPrefix returns err with prefix taken off the front of its message,
// for wrapping in a message that has it already; errors.Is and errors.As
// still find err and what it wraps.
func withoutPrefix(err error) error {
	if !strings.HasPrefix(err.Error(), prefix) {
		return err
	}
	return unprefixed{err}
}

type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), prefix) }
func (u unprefixed) Unwrap() error { return u.err }

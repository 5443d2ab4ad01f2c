// Package offer holds the sending side of the scheduler: the Sender a
// component schedules, the Options it schedules with (among them its wants:
// which peers' channels it may be offered, and how many at least), and the
// Offer it is handed (a view of up to N open channels of which it may close
// at most M, the offer's size).
//
// Senders are matched, not polled. An offer lists only channels that meet
// its sender's wants, and goes to a sender only when enough of them are
// open. A sender that sends nothing through an offer keeps its place but is
// parked: it has said it has nothing to send, so it is not offered anything
// again, however many channels open, until it asks with the scheduler's
// Reoffer (which keeps its place, and its priority). Its next offer is a
// different one: made later, it lists the channels open then. So a channel
// opening costs the scheduler the same whether one sender waits or
// thousands wait parked.
package offer

import (
	"errors"
	"fmt"
	"iter"
	"reflect"
	"sync"
	"time"

	"github.com/peersched/peersched/internal/offerlink"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Sender is a component waiting for open channels. Its wait ends exactly
// once: by its first send that the host accepts, during an OnOffer call (it
// has then left the queue, though the call goes on and may send up to the
// offer's size); by OnDiscard, once, if the scheduler stops first; or by its
// withdrawal. A withdrawn sender is never offered channels again nor
// discarded (an offer made just before the withdrawal may still reach
// OnOffer, already expired).
//
// A sender that sends nothing during an OnOffer call (it declines, or every
// send it tries fails) keeps its place but is parked until it calls the
// scheduler's Reoffer with its ticket: that is how it says it has something
// to send again. A sender that may want channels again at any moment calls
// Reoffer when it learns so (new work, a response that freed it); one that
// wants them only from some peers says so in its Options instead of
// declining the others.
//
// Sender callbacks never run concurrently with each other and never while the
// scheduler holds a lock, so they may call any scheduler method.
type Sender interface {
	// OnOffer is handed an offer that is valid only until OnOffer returns.
	// Sending on none of its channels keeps the sender in its place in the
	// queue, parked: it is offered again once it calls Reoffer (which it
	// may do from inside OnOffer, to be offered again at once).
	OnOffer(o Offer)
	// OnDiscard is called when the scheduler stops while the sender waits.
	OnDiscard()
}

// Options are a sender's terms beyond its priority, for the scheduler's
// ScheduleWith. The zero Options are those of Schedule.
//
// Avoid, Only and MinChannels are the sender's wants: which channels it may
// be offered. An offer lists only the open channels to peers in Only (to
// any peer if Only is empty) that are not in Avoid, best first as always,
// and goes to the sender only when at least MinChannels of them (at least
// one) are open; until then the sender is passed over, keeping its place,
// and it is offered channels as soon as enough open. A sender does better
// to say what it wants here than to decline offers: a sender that declines
// is parked (see Sender).
type Options struct {
	// Class names the class the sender's messages book (declared in the
	// scheduler's Config.Classes): each request or notification it sends
	// counts in the class and its ancestors until it ends, and while any of
	// them is at its limit the sender is passed over, keeping its place.
	// "" books no class.
	Class string
	// Bytes is the size, in bytes, that the sender declares for each
	// message it will send: every request or notification it sends is
	// charged that much against the scheduler's byte budget (its
	// Budget.ByteRate), if it has one. 0 declares nothing, and the sender's
	// messages are not counted in bytes; without a byte budget the size is
	// not used.
	//
	// The size is declared here, with the sender's place in the queue,
	// rather than with each send, because the budget must be paid before
	// the sender is offered anything: a sender the budget cannot pay for
	// yet waits in the queue, keeping its place, and an offer lets it send
	// only as many messages as the budget pays for. A size seen only at
	// the send could be refused only with an error. A sender whose
	// messages differ in size declares the largest of them (the budget
	// then errs on the safe side) or schedules a sender per size.
	//
	// A negative size, or one larger than the budget's ByteBurst (which the
	// budget could never pay), is refused by ScheduleWith.
	Bytes int64
	// Cost is what each request or notification the sender sends costs a
	// paced peer (one connected with a peer.Options.Rate), in that peer's
	// own units, those of its Rate: the peer's pacer is charged Cost when
	// the message's send begins, and gets exactly Cost back if the host
	// refuses the send. 0 declares nothing: each message costs the peer
	// its Rate's Cost. A peer that is not paced is not charged. A
	// notification that costs a rippled peer the trivial fee, for
	// instance, declares 1 where a query costs 250, so that it leaves the
	// peer's rate to the queries.
	//
	// A paced peer's channels are counted at the dearest cost any sender
	// of the scheduler has declared, or its Rate's Cost if that is more
	// (see limit.Pacer), so every channel it offers pays for any
	// sender's message: a message dearer than the Rate's Cost is charged
	// in full, never cut down, and a scheduler that has seen one offers
	// fewer channels of each paced peer from then on. A negative cost is
	// refused by ScheduleWith, and so is one above the Burst of a
	// connected paced peer (or above limit.MaxBurst), which that peer
	// could never pay; a peer whose Burst is below a cost already
	// declared is refused by ConnectWith.
	Cost int64

	// Avoid lists peers whose channels the sender is never offered: a retry
	// or a hedge that must not go back to the peer that was slow or
	// failed.
	Avoid []peer.ID
	// Only, if not empty, lists the only peers whose channels the sender is
	// offered: a request that only those peers can answer. A peer both in
	// Only and in Avoid is avoided; a sender whose every Only peer is
	// avoided is refused by ScheduleWith, since it could never be offered
	// anything. A peer in Only that is not connected is waited for.
	Only []peer.ID
	// MinChannels is how many channels the sender wants to choose from: it
	// is offered channels only when at least that many that it wants are
	// open, and its offer lists at least that many. The offer's size (how
	// many it may close) is unchanged: one while other senders wait (parked
	// ones too), and no more than the budget and the sender's class allow.
	// 0 and 1 mean one. A negative value, or one above the scheduler's
	// MaxOfferChannels (an offer could never list that many), is refused
	// by ScheduleWith.
	MinChannels int
}

// Ticket names one scheduled sender, so its owner can withdraw it. Tickets are
// never zero and never reused by the same scheduler in practice (a slot is
// reused only with a new 32-bit generation).
type Ticket uint64

// Channel is one open channel listed in an offer.
type Channel struct {
	// Peer is the peer the channel leads to.
	Peer peer.ID
	// ChannelsClosed is how many of the peer's channels were closed (how
	// many messages it had in flight) when the offer was made: a busier
	// peer has more.
	ChannelsClosed int
	// Limit is how many messages the peer could have in flight when the
	// offer was made: its current limit, fixed or adaptive.
	// ChannelsClosed/Limit is how loaded the peer is.
	Limit int
	// RTT is the peer's smoothed response time; 0 until one of its requests
	// has been answered or has timed out.
	RTT time.Duration
}

// channelOf turns one of the pool's choices into an offered channel.
func channelOf(c *peerpool.Choice) Channel {
	return Channel{Peer: c.ID, ChannelsClosed: c.Closed, Limit: c.Limit, RTT: c.RTT}
}

// Status describes an offer at one moment.
type Status struct {
	Live bool // the offer is still open: its OnOffer call has not returned
	Len  int  // channels listed (N)
	Size int  // channels the sender may close (M)
	Sent int  // channels the sender has closed so far
}

// Offer is a sender's view of open channels, valid only during the OnOffer
// call it was passed to. It is a small value and may be copied; every copy
// names the same offer. Its methods are safe for concurrent use. The zero
// Offer behaves as an expired one.
type Offer struct {
	carrier    offerlink.Carrier // the scheduler; nil in the zero Offer
	generation uint64
}

// init hands the scheduler the constructor of offers (see package
// offerlink): users never build an Offer but the scheduler must, once per
// offer, without an allocation.
func init() {
	offerlink.NewOffer = func(c offerlink.Carrier, generation uint64) Offer {
		return Offer{carrier: c, generation: generation}
	}
}

// Len returns the number of channels the offer lists, or 0 once it has expired.
func (o Offer) Len() int { return o.Status().Len }

// Size returns how many channels the sender may close through this offer.
func (o Offer) Size() int { return o.Status().Size }

// Remaining returns how many more channels the sender may close, or 0 once the
// offer has expired.
func (o Offer) Remaining() int {
	s := o.Status()
	if !s.Live {
		return 0
	}
	return s.Size - s.Sent
}

// Status reports the offer's state.
func (o Offer) Status() Status {
	if o.carrier == nil {
		return Status{}
	}
	return Status(o.carrier.OfferStatus(o.generation))
}

// Channel returns the i-th listed channel, best first: peers with fewer
// closed channels, then lower response time (within a factor of two, times
// may count as equal), then, among equals, in turns from an order the
// scheduler's rank seed picks (see Ranking in the scheduler's package
// documentation). ok is false if i is out of range or the offer has
// expired.
func (o Offer) Channel(i int) (c Channel, ok bool) {
	if o.carrier == nil {
		return Channel{}, false
	}
	choice, ok := o.carrier.OfferChannel(o.generation, i)
	return channelOf(&choice), ok
}

// All returns an iterator over the channels the offer lists, best first,
// each with its index (the i that Request, RequestSoft and Notify take).
// The list is read once, when the iteration begins, under one acquisition
// of the scheduler's lock, and no lock is held while the loop body runs, so
// the body may send on the channels it is shown. An offer that has expired
// by then yields nothing. Once warm, iterating allocates nothing.
func (o Offer) All() iter.Seq2[int, Channel] {
	return func(yield func(int, Channel) bool) {
		if o.carrier == nil {
			return
		}
		buf := snapshots.Get().(*[]peerpool.Choice)
		list := o.carrier.OfferChannels(o.generation, (*buf)[:0])
		for i := range list {
			if !yield(i, channelOf(&list[i])) {
				break
			}
		}
		clear(list) // let the peers' IDs go
		*buf = list[:0]
		snapshots.Put(buf)
	}
}

// snapshots recycles the buffers All reads offers' channel lists into.
var snapshots = sync.Pool{New: func() any { return new([]peerpool.Choice) }}

// Request is everything a request is sent with, for Offer.Send: the
// message, the receiver of its answer, its deadlines and the type of
// response it expects. Request and RequestSoft are short forms of Send for
// the common cases.
type Request struct {
	// Message is what the host's Peer.Send is given.
	Message any
	// Receiver gets the request's one outcome. It must not be nil.
	Receiver receiver.Receiver
	// Timeout is the request's deadline, measured from the send: with no
	// answer by then, it fails with receiver.Timeout. It must be positive.
	Timeout time.Duration
	// Soft, if not 0, is an earlier deadline (seed 002's two-phase
	// timeout), also measured from the send: at Soft, if no answer has
	// come, a receiver that is a receiver.SlowReceiver is told the request
	// is slow (OnSlow, at most once), and the request stays live, keeping
	// its channel closed, so the sender may ask another peer meanwhile. It
	// must be below Timeout.
	Soft time.Duration
	// Expect, if not nil, is the type the response must have: the
	// scheduler's Deliver refuses a response of another dynamic type with
	// receiver.ErrWrongResponseType, counts it in Stats.WrongType and
	// leaves the request live, so that its right response can still come
	// (as rippled drops a reply of the wrong message type). An interface
	// type accepts every response that implements it. The check compares
	// types under the scheduler's lock and runs no user code; a receiver
	// that needs more than the type checks the response itself. Use
	// reflect.TypeFor to name the type: reflect.TypeFor[*Reply]().
	Expect reflect.Type
}

// Send sends r.Message as a request on the i-th channel, closing it, and
// returns the request's ID. r.Receiver is called exactly once with the
// response or the failure (after r.Timeout without a response, when the
// peer refuses it (Scheduler.Refuse), when the peer disconnects, or when
// the scheduler stops), unless withdrawn. On
// error nothing was sent, the channel stays open, and the receiver is
// never called. Errors: ErrExpired, ErrNoSuchChannel, ErrChannelUsed,
// ErrSizeExceeded, ErrPeerGone, ErrPeerAtLimit, receiver.ErrNilReceiver,
// receiver.ErrBadTimeout (a Timeout that is not positive, or a Soft that
// is negative or not below Timeout), receiver.ErrTooManyRequests, the
// scheduler's ErrStopped, or the host's send error.
func (o Offer) Send(i int, r Request) (peer.RequestID, error) {
	if o.carrier == nil {
		return 0, ErrExpired
	}
	if r.Soft != 0 && (r.Soft < 0 || r.Soft >= r.Timeout) {
		return 0, badSoft(r.Soft, r.Timeout)
	}
	return o.carrier.OfferRequest(o.generation, i, offerlink.Request(r))
}

// badSoft is the error for a soft deadline that is not strictly between 0
// and the hard one.
func badSoft(soft, hard time.Duration) error {
	return fmt.Errorf("%w: soft deadline %v, hard %v: need 0 < soft < hard", receiver.ErrBadTimeout, soft, hard)
}

// Request sends message on the i-th channel with deadline timeout and no
// expected type: it is Send(i, Request{Message: message, Receiver: r,
// Timeout: timeout}), with Send's errors.
func (o Offer) Request(i int, message any, r receiver.Receiver, timeout time.Duration) (peer.RequestID, error) {
	return o.Send(i, Request{Message: message, Receiver: r, Timeout: timeout})
}

// RequestSoft is Request with two deadlines, soft and hard: it is Send(i,
// Request{Message: message, Receiver: r, Soft: soft, Timeout: hard}). At
// soft a receiver.SlowReceiver is told the request is slow and the request
// stays live; at hard it fails with receiver.Timeout. 0 < soft < hard, or
// the error is receiver.ErrBadTimeout; its other errors are Send's.
func (o Offer) RequestSoft(i int, message any, r receiver.Receiver, soft, hard time.Duration) (peer.RequestID, error) {
	if soft <= 0 { // Send reads a zero Soft as none
		return 0, badSoft(soft, hard)
	}
	return o.Send(i, Request{Message: message, Receiver: r, Soft: soft, Timeout: hard})
}

// Notify sends message as a notification on the i-th channel, closing it until
// digest has passed: the time the peer needs to take the message in. Errors
// are Send's, less receiver.ErrNilReceiver and receiver.ErrTooManyRequests
// (notifications are not counted against Config.MaxRequests); digest must
// be positive (receiver.ErrBadTimeout).
func (o Offer) Notify(i int, message any, digest time.Duration) error {
	if o.carrier == nil {
		return ErrExpired
	}
	return o.carrier.OfferNotify(o.generation, i, message, digest)
}

// Errors about senders and offers, returned by the scheduler's Schedule and
// by sends through an offer. They can be matched with errors.Is.
var (
	// ErrNilSender is returned when a nil sender is scheduled.
	ErrNilSender = errors.New("peersched: sender is nil")
	// ErrExpired is returned for a send on an offer whose OnOffer call has returned.
	ErrExpired = errors.New("peersched: send outside its offer")
	// ErrNoSuchChannel is returned for a channel index outside the offer.
	ErrNoSuchChannel = errors.New("peersched: no such channel in the offer")
	// ErrChannelUsed is returned for a second send on one channel of an offer.
	ErrChannelUsed = errors.New("peersched: channel already used in this offer")
	// ErrSizeExceeded is returned for a send beyond the offer's size.
	ErrSizeExceeded = errors.New("peersched: offer size exceeded")
	// ErrPeerGone is returned for a send on a channel whose peer disconnected
	// after the offer was made.
	ErrPeerGone = errors.New("peersched: the channel's peer has disconnected")
	// ErrPeerAtLimit is returned for a send on a channel that closed after
	// the offer was made because its peer's limit fell: the peer already
	// has as many messages in flight as it may.
	ErrPeerAtLimit = errors.New("peersched: the channel's peer is at its limit")
	// ErrTooManySenders is returned when the cap on waiting senders is reached.
	ErrTooManySenders = errors.New("peersched: too many senders waiting")
)

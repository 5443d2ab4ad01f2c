// Package offerlink joins package offer to the scheduler that carries out
// what senders do with their offers, so that neither has to export to users
// what only the other needs: the scheduler implements Carrier, and builds
// offers with the constructor package offer leaves in NewOffer.
//
// Package offer cannot export a constructor (it would read as one for
// users), and cannot import the scheduler (which imports it), so it hands
// its constructor over at init through this package, which imports neither
// offer nor the scheduler. NewOffer is an
// any because its result type, offer.Offer, cannot be named here; the
// scheduler asserts it once, at its own init, to a typed func value, so
// building an offer costs an indirect call and no allocation.
package offerlink

import (
	"reflect"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Carrier carries out what a sender does with the offer named generation.
// The scheduler implements it; users hold offer.Offers, never Carriers.
type Carrier interface {
	OfferStatus(generation uint64) Status
	// OfferChannel returns the i-th channel listed.
	OfferChannel(generation uint64, i int) (peerpool.Choice, bool)
	// OfferChannels appends every channel listed to dst, best first, read
	// at one moment: nothing if the offer has expired.
	OfferChannels(generation uint64, dst []peerpool.Choice) []peerpool.Choice
	// OfferRequest sends a request, whose Soft and Timeout Offer.Send has
	// checked against each other.
	OfferRequest(generation uint64, i int, req Request) (peer.RequestID, error)
	OfferNotify(generation uint64, i int, message any, digest time.Duration) error
}

// Status is offer.Status, field for field, so that package offer converts
// one to the other for free (a change to one that the other misses does
// not compile).
type Status struct {
	Live bool
	Len  int
	Size int
	Sent int
}

// Request is offer.Request, field for field, converted the same way.
type Request struct {
	Message  any
	Receiver receiver.Receiver
	Timeout  time.Duration
	Soft     time.Duration
	Expect   reflect.Type
}

// NewOffer is package offer's constructor, a func(Carrier, uint64)
// offer.Offer returning the offer named generation, carried out by the
// Carrier. Package offer sets it in its init, before any package that
// imports offer is initialized.
var NewOffer any

package offerqueue

import (
	"github.com/peersched/peersched/internal/offerlink"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/offer"
)

// Book records the offer that is open and decides when each offered sender
// leaves the queue.
//
// A sender leaves by sending: the moment the host accepts its first send
// through an offer, not when OnOffer returns, so a sender that has sent no
// longer counts as waiting while the rest of its OnOffer runs. A sender that
// sends nothing keeps its place. Sends are not instant (the host's Send runs
// user code, possibly on another goroutine), so the Book keeps, for every
// offer whose sends have not all finished, a record of how many are in
// progress: an offer that closes (its OnOffer returns) with sends still in
// progress leaves its sender's fate open until the last of them finishes.
//
// One offer is open at a time, so one Book, reused, serves them all without
// allocating once warm. The zero Book has no open offer. A Book is not safe
// for concurrent use; the scheduler guards it with its offers lock.
type Book struct {
	generation uint64 // of the current or last offer; each offer gets the next
	live       bool   // the current offer's OnOffer has not returned
	expired    bool   // the current offer takes no more sends (withdrawn or stopped)
	channels   []peerpool.Choice
	used       []bool
	size       int
	claims     int // sends begun through the current offer and not undone
	// lister fills in the current offer's channels after the first when
	// they are listed lazily (see Lister); nil if they never are.
	lister Lister
	// owes is set while the lister may owe the current offer's channels
	// after the first: it lists more than one, and none has been read.
	owes bool

	// undecided holds a record for the current offer and for every closed
	// offer with sends still in progress; usually one entry, never many.
	undecided []offerRecord
}

// offerRecord follows one offer until its sender's exit is decided.
type offerRecord struct {
	generation uint64
	ticket     Ticket
	sender     Sender
	inProgress int  // sends begun whose host send has not returned
	sent       bool // a send through this offer succeeded: the sender has left
	closed     bool // the offer's OnOffer has returned
	discard    bool // the scheduler stopped: discard the sender unless it sends
}

// Lister is the pool seen by a Book whose offers' channels after the first
// may be listed lazily (peerpool.Pool.BestDeferred): the book has them
// filled in before it reads past the first, and forgotten once no one can
// read them.
type Lister interface {
	FillListing()
	ForgetListing()
}

// SetLister makes l the pool that fills in the offers' lazily listed
// channels.
func (b *Book) SetLister(l Lister) { b.lister = l }

// FillListing has the lister fill in the current offer's channels after
// the first, if it owes them. Claim leaves it to its caller, to stay small
// enough to inline on every send's path.
func (b *Book) FillListing() {
	if b.owes {
		b.owes = false
		b.lister.FillListing()
	}
}

// forgetListing tells the lister that the current offer's channels will
// not be read again.
func (b *Book) forgetListing() {
	if b.owes {
		b.owes = false
		b.lister.ForgetListing()
	}
}

// Exit says what the scheduler must do with an offered sender after a step
// of its offer.
type Exit uint8

const (
	// Undecided: nothing yet; the sender stays where it is.
	Undecided Exit = iota
	// LeftBySend: the sender's first send succeeded. It leaves the queue now.
	LeftBySend
	// Declined: the offer ended with no send. The sender keeps its place
	// and is parked until it asks for another offer (see Queue), or is
	// discarded if the scheduler stopped meanwhile (see Decision.Discard).
	Declined
	// Held: the offer closed with sends in progress and none succeeded yet.
	// The sender must not be offered again until they finish.
	Held
)

// Decision is the outcome of a step of an offer for its sender.
type Decision struct {
	Exit   Exit
	Ticket Ticket
	Sender Sender // set when Discard is
	// Discard is set with Declined when the scheduler stopped while the
	// offer was undecided: the sender gets OnDiscard instead of its place.
	Discard bool
}

// Open starts a new offer to the sender named ticket, listing choices (copied)
// and allowing size sends, and returns its generation. The previous offer
// must have been closed. Open is not for a Book with a Lister, whose fill
// of a deferred listing goes to the Lister's array, not the copy (the
// scheduler opens with OpenListed).
func (b *Book) Open(ticket Ticket, snd Sender, choices []peerpool.Choice, size int) uint64 {
	n := len(choices)
	if cap(b.channels) < n {
		b.channels = make([]peerpool.Choice, n)
	}
	b.channels = b.channels[:n]
	// Field by field into place, not append(b.channels, c): appending a
	// struct with a pointer goes through typedmemmove, which made Open cost
	// twice as much for every offer.
	for i := range choices {
		c, ch := &choices[i], &b.channels[i]
		ch.Ref, ch.ID, ch.Closed, ch.Limit, ch.RTT = c.Ref, c.ID, c.Closed, c.Limit, c.RTT
	}
	return b.OpenListed(ticket, snd, b.channels, size)
}

// Listing returns the book's own list of channels, emptied, for the caller
// to list the next offer's channels into and pass to OpenListed: an offer
// then costs no copy of its channels. It may be called only while no offer
// is open, and the list is the book's again once passed to OpenListed. The
// channels after the first may be listed lazily, by the book's Lister.
func (b *Book) Listing() []peerpool.Choice { return b.channels[:0] }

// OpenListed is Open for choices listed into what Listing returned, which
// the book keeps as they are.
func (b *Book) OpenListed(ticket Ticket, snd Sender, choices []peerpool.Choice, size int) uint64 {
	b.generation++
	b.live, b.expired = true, false
	b.channels = choices
	n := len(choices)
	b.owes = b.lister != nil && n > 1
	if cap(b.used) < n {
		b.used = make([]bool, n)
	}
	b.used = b.used[:n]
	clear(b.used)
	b.size = min(size, len(choices))
	b.claims = 0
	// Every field written in place: a freed slot keeps all but its sender
	// (see settle), and appending a record, a struct with a pointer, goes
	// through typedmemmove.
	if n := len(b.undecided); n < cap(b.undecided) {
		b.undecided = b.undecided[:n+1]
	} else {
		b.undecided = append(b.undecided, offerRecord{})
	}
	r := &b.undecided[len(b.undecided)-1]
	r.generation, r.ticket, r.sender = b.generation, ticket, snd
	r.inProgress, r.sent, r.closed, r.discard = 0, false, false, false
	return b.generation
}

// Close records that the OnOffer call of the offer named generation has
// returned: the offer takes no more sends, and the sender's exit is decided
// unless sends are still in progress.
func (b *Book) Close(generation uint64) Decision {
	var d Decision
	b.CloseInto(generation, &d)
	return d
}

// CloseInto is Close, writing the decision into *d, every field of it: the
// scheduler's form, which spares a copy of the decision at each call it
// is returned through.
func (b *Book) CloseInto(generation uint64, d *Decision) {
	if generation == b.generation {
		b.live = false
		b.forgetListing()
	}
	i := b.find(generation)
	if i < 0 {
		*d = Decision{}
		return
	}
	r := &b.undecided[i]
	r.closed = true
	if r.inProgress > 0 {
		if r.sent {
			*d = Decision{}
			return
		}
		*d = Decision{Exit: Held, Ticket: r.ticket}
		return
	}
	b.settle(i, d)
}

// Expire makes the open offer refuse every later send, as if its OnOffer had
// returned, while its record stays until the call really returns.
func (b *Book) Expire() {
	b.expired = true
	b.forgetListing()
}

// Live reports whether an offer's OnOffer call is running, and for which sender.
func (b *Book) Live() (Ticket, bool) {
	if !b.live {
		return 0, false
	}
	return b.undecided[len(b.undecided)-1].ticket, true
}

// StopAll marks every undecided offer's sender for discard unless one of its
// sends succeeds; the open offer stays as it is (the scheduler refuses its
// sends once stopped). keep is called
// with each undecided sender that has not sent and returns whether the
// sender was still waiting (the scheduler has just taken it out of its
// queue); a sender that was not (it was withdrawn) is left alone.
func (b *Book) StopAll(keep func(Ticket) bool) {
	for i := range b.undecided {
		r := &b.undecided[i]
		if !r.sent && keep(r.ticket) {
			r.discard = true
		}
	}
}

// InProgress returns the number of sends begun and not yet finished, over
// every offer.
func (b *Book) InProgress() int {
	n := 0
	for i := range b.undecided {
		n += b.undecided[i].inProgress
	}
	return n
}

// Status describes the offer named generation.
func (b *Book) Status(generation uint64) offerlink.Status {
	if !b.current(generation) {
		return offerlink.Status{}
	}
	return offerlink.Status{Live: true, Len: len(b.channels), Size: b.size, Sent: b.claims}
}

// Channel returns the i-th channel of the offer named generation.
func (b *Book) Channel(generation uint64, i int) (peerpool.Choice, bool) {
	if !b.current(generation) || i < 0 || i >= len(b.channels) {
		return peerpool.Choice{}, false
	}
	if i > 0 {
		b.FillListing()
	}
	return b.channels[i], true
}

// Channels appends the channels of the offer named generation to dst, or
// nothing if it is not the current offer.
func (b *Book) Channels(generation uint64, dst []peerpool.Choice) []peerpool.Choice {
	if !b.current(generation) {
		return dst
	}
	b.FillListing()
	return append(dst, b.channels...)
}

// Claim checks that the sender may send on the i-th channel of the offer named
// generation and, if so, records a send in progress; the caller must report
// how it ended with Finish. On error it changes nothing. For i > 0 the
// caller calls FillListing first: the channel it returns may be owed.
//
// The channel is returned in place, in the book's own listing, not copied:
// the caller copies what it keeps before the book changes (before it lets
// go of the lock that guards the book, say).
func (b *Book) Claim(generation uint64, i int) (*peerpool.Choice, error) {
	switch {
	case !b.current(generation):
		return nil, offer.ErrExpired
	case i < 0 || i >= len(b.channels):
		return nil, offer.ErrNoSuchChannel
	case b.used[i]:
		return nil, offer.ErrChannelUsed
	case b.claims >= b.size:
		return nil, offer.ErrSizeExceeded
	}
	b.used[i] = true
	b.claims++
	b.undecided[len(b.undecided)-1].inProgress++
	return &b.channels[i], nil
}

// Finish records how a send claimed on the i-th channel of the offer named
// generation ended. A failed send is undone: if the offer is still open the
// channel may be used again, and the send does not count. The decision says
// whether the sender's exit is now settled.
func (b *Book) Finish(generation uint64, i int, ok bool) Decision {
	var d Decision
	b.FinishInto(generation, i, ok, &d)
	return d
}

// FinishInto is Finish, writing the decision into *d, every field of it
// (see CloseInto).
func (b *Book) FinishInto(generation uint64, i int, ok bool, d *Decision) {
	if !ok && generation == b.generation && b.used[i] {
		b.used[i] = false
		b.claims--
	}
	j := b.find(generation)
	if j < 0 {
		*d = Decision{}
		return
	}
	r := &b.undecided[j]
	r.inProgress--
	first := ok && !r.sent
	if ok {
		r.sent = true
	}
	if r.closed && r.inProgress == 0 {
		b.settle(j, d)
		if first {
			d.Exit = LeftBySend
		}
		return
	}
	if first {
		*d = Decision{Exit: LeftBySend, Ticket: r.ticket}
		return
	}
	*d = Decision{}
}

// settle forgets the record at index i, whose offer is closed with no send
// in progress, and writes into *d what becomes of its sender. It reads the
// record in place rather than copying it out, and clears of the freed slot
// only the sender, so that it can be collected: OpenListed writes every
// field when it reuses the slot.
func (b *Book) settle(i int, d *Decision) {
	r := &b.undecided[i]
	ticket, sent, discard := r.ticket, r.sent, r.discard
	var snd Sender
	if discard && !sent {
		snd = r.sender
	}
	last := len(b.undecided) - 1
	copy(b.undecided[i:], b.undecided[i+1:])
	b.undecided[last].sender = nil
	b.undecided = b.undecided[:last]
	if sent {
		*d = Decision{Exit: Undecided, Ticket: ticket} // it left by its first send
		return
	}
	*d = Decision{Exit: Declined, Ticket: ticket, Discard: discard, Sender: snd}
}

func (b *Book) find(generation uint64) int {
	for i := range b.undecided {
		if b.undecided[i].generation == generation {
			return i
		}
	}
	return -1
}

func (b *Book) current(generation uint64) bool {
	return b.live && !b.expired && generation == b.generation
}

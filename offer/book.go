package offer

import "github.com/peersched/peersched/peer"

// Book records the one offer that is open at a time: the channels it lists,
// its size, and which channels the sender has used. The scheduler makes offers
// one after another, so one Book, reused, serves them all without allocating.
//
// The zero Book has no open offer. A Book is not safe for concurrent use; the
// scheduler guards it with its offers lock.
type Book struct {
	generation uint64 // of the current or last offer; each offer gets the next
	live       bool
	ticket     Ticket
	channels   []Channel
	used       []bool
	size       int
	sent       int
}

// Open starts a new offer to the sender named ticket, listing choices (copied)
// and allowing size sends, and returns its generation. Any earlier offer
// expires.
func (b *Book) Open(ticket Ticket, choices []peer.Choice, size int) uint64 {
	b.generation++
	b.live = true
	b.ticket = ticket
	n := len(choices)
	if cap(b.channels) < n {
		b.channels = make([]Channel, n)
	}
	if cap(b.used) < n {
		b.used = make([]bool, n)
	}
	b.channels, b.used = b.channels[:n], b.used[:n]
	// Field by field into place, not append(b.channels, ChannelOf(c)):
	// appending a struct with a pointer goes through typedmemmove, which
	// made Open cost twice as much for every offer.
	for i := range choices {
		c, ch := &choices[i], &b.channels[i]
		ch.Peer, ch.Closed, ch.RTT, ch.ref = c.ID, c.Closed, c.RTT, c.Ref
		b.used[i] = false
	}
	b.size = min(size, len(choices))
	b.sent = 0
	return b.generation
}

// Close expires the current offer and returns how many channels its sender
// closed through it.
func (b *Book) Close() (sent int) {
	b.live = false
	return b.sent
}

// Live reports whether an offer is open, and to which sender.
func (b *Book) Live() (Ticket, bool) { return b.ticket, b.live }

// Sent returns how many channels the sender of the open (or last) offer has
// closed through it.
func (b *Book) Sent() int { return b.sent }

// Status describes the offer named generation.
func (b *Book) Status(generation uint64) Status {
	if !b.current(generation) {
		return Status{}
	}
	return Status{Live: true, Len: len(b.channels), Size: b.size, Sent: b.sent}
}

// Channel returns the i-th channel of the offer named generation.
func (b *Book) Channel(generation uint64, i int) (Channel, bool) {
	if !b.current(generation) || i < 0 || i >= len(b.channels) {
		return Channel{}, false
	}
	return b.channels[i], true
}

// Claim checks that the sender may send on the i-th channel of the offer named
// generation and, if so, records the send. On error it changes nothing.
func (b *Book) Claim(generation uint64, i int) (Channel, error) {
	switch {
	case !b.current(generation):
		return Channel{}, ErrExpired
	case i < 0 || i >= len(b.channels):
		return Channel{}, ErrNoSuchChannel
	case b.used[i]:
		return Channel{}, ErrChannelUsed
	case b.sent >= b.size:
		return Channel{}, ErrSizeExceeded
	}
	b.used[i] = true
	b.sent++
	return b.channels[i], nil
}

// Unclaim undoes a Claim whose send failed, if the offer is still open. The
// channel may then be used again, and the send does not count.
func (b *Book) Unclaim(generation uint64, i int) {
	if b.current(generation) && b.used[i] {
		b.used[i] = false
		b.sent--
	}
}

func (b *Book) current(generation uint64) bool {
	return b.live && generation == b.generation
}

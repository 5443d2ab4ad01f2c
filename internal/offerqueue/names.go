// Package offerqueue holds the scheduler's side of offers: the Queue of
// waiting senders, in the order they are offered channels, and the Book
// that checks what a sender does with its offer and decides when the
// sender leaves the queue.
package offerqueue

import "github.com/peersched/peersched/offer"

// The queue and the book deal in package offer's senders and tickets.
type (
	Sender = offer.Sender
	Ticket = offer.Ticket
)

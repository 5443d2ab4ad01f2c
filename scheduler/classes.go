package scheduler

import (
	"fmt"
	"math"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/receiver"
)

// Classes (Config.Classes) cap the messages in flight of each kind of
// traffic. A sender scheduled with a class books it with each message it
// sends, on the send, and the message releases it exactly once when it ends,
// however it ends: answered, timed out, failed by a disconnect or by Stop,
// digested (a notification), or undone because the host refused the send.
// While the class, or any ancestor, is at its limit the sender is passed
// over, keeping its place (offer.Queue.Next, one limit.Pass per offer), and
// an offer never lets it send more than the class has room for, so every
// booking on a send succeeds.

// ClassUsage describes one class's messages in flight.
type ClassUsage struct {
	Name     string
	Limit    int // its own limit; limit.Unlimited if it has none of its own
	InFlight int // its messages in flight, its descendants' included
}

// ClassUsage appends each class's usage to dst, in the order Config.Classes
// declares them: a consistent snapshot.
func (s *Scheduler) ClassUsage(dst []ClassUsage) []ClassUsage {
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	if s.classes == nil {
		return dst
	}
	for i := range s.classes.Len() {
		id := limit.ClassID(i)
		n, _ := s.classes.InFlight(id) // id is valid: no error
		l, _ := s.classes.Limit(id)
		dst = append(dst, ClassUsage{Name: s.classes.Name(id), Limit: l, InFlight: n})
	}
	return dst
}

// classOf returns the class named name, or an error wrapping
// limit.ErrUnknownClass. Caller holds offersMu.
func (s *Scheduler) classOf(name string) (limit.ClassID, error) {
	if s.classes == nil {
		return 0, fmt.Errorf("%w: %q (no classes are configured)", limit.ErrUnknownClass, name)
	}
	return s.classes.ID(name)
}

// classRoomLocked returns how many more messages class (a ClassID plus one)
// may have in flight now; math.MaxInt for 0, no class. Caller holds
// offersMu.
func (s *Scheduler) classRoomLocked(class int32) int {
	if class == 0 {
		return math.MaxInt
	}
	room, _ := s.classes.Room(limit.ClassID(class - 1)) // a class the queue holds: valid
	return room
}

// bookLocked books the open offer's class, if it has one, for a message
// whose send begins now, and returns it for the message's Terms. The offer's
// size has made sure the class has room. Caller holds offersMu.
func (s *Scheduler) bookLocked() int32 {
	if s.offerClass != 0 {
		if ok, err := s.classes.Book(limit.ClassID(s.offerClass - 1)); !ok || err != nil {
			s.bookingErrors++
		}
	}
	return s.offerClass
}

// releaseLocked releases the class that a message booked, now that it has
// ended. Caller holds offersMu.
func (s *Scheduler) releaseLocked(t receiver.Terms) {
	if t.Class != 0 {
		if err := s.classes.Release(limit.ClassID(t.Class - 1)); err != nil {
			s.bookingErrors++
		}
	}
}

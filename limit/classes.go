package limit

import (
	"errors"
	"fmt"
	"math"
)

// Class declares one class of traffic: a name senders use, a limit on its
// requests in flight, and the class it belongs to. A request booked in a
// class also counts in every ancestor, so a parent's limit caps the sum of
// its children (64 in all; ledger fetches at most 48 of them; each ledger
// fetch at most 8).
type Class struct {
	// Name identifies the class; it must be unique and not empty.
	Name string
	// Limit is the most requests the class may have in flight, at least 1.
	// Unlimited gives a class no limit of its own (only its ancestors').
	Limit int
	// Parent names the class this one belongs to; "" for a root. Parents
	// may be declared after their children.
	Parent string
}

// Unlimited is a Class limit no count reaches.
const Unlimited = math.MaxInt

// ClassID names a class of one Classes: the index of its declaration.
type ClassID int32

// Errors from Classes. They can be matched with errors.Is.
var (
	// ErrBadClass is returned by NewClasses for an empty name or a limit
	// below 1.
	ErrBadClass = errors.New("limit: bad class")
	// ErrDuplicateClass is returned by NewClasses for a name declared twice.
	ErrDuplicateClass = errors.New("limit: duplicate class")
	// ErrUnknownClass is returned for a parent, name or ClassID that names
	// no declared class.
	ErrUnknownClass = errors.New("limit: unknown class")
	// ErrClassCycle is returned by NewClasses when following parents leads
	// back to where it started.
	ErrClassCycle = errors.New("limit: class cycle")
	// ErrNotBooked is returned by Release for a class with nothing booked:
	// a release without a booking, or a second release of one.
	ErrNotBooked = errors.New("limit: release without booking")
)

// Classes is a tree (a forest) of classes with their requests in flight. A
// booking succeeds only if the class and every ancestor are below their
// limits, and then counts in all of them; a release undoes exactly one
// booking. So no class ever has more requests in flight than its limit, nor
// than any ancestor's.
//
// A Classes is not safe for concurrent use (the scheduler guards it). The
// zero value has no classes; build one with NewClasses.
type Classes struct {
	byName  map[string]ClassID
	classes []class
}

type class struct {
	name     string
	limit    int
	parent   ClassID // -1 for a root
	booked   int     // bookings made in this class itself
	inFlight int     // booked plus every descendant's booked
}

// NewClasses returns the classes decls declares, in that order (the ClassID
// of decls[i] is i), with nothing booked. It fails with an error wrapping
// ErrBadClass, ErrDuplicateClass, ErrUnknownClass (a parent not declared)
// or ErrClassCycle, naming the class at fault.
func NewClasses(decls []Class) (*Classes, error) {
	if len(decls) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d classes", ErrBadClass, len(decls))
	}
	c := &Classes{byName: make(map[string]ClassID, len(decls)), classes: make([]class, len(decls))}
	for i, d := range decls {
		if d.Name == "" {
			return nil, fmt.Errorf("%w: class %d has no name", ErrBadClass, i)
		}
		if d.Limit < 1 {
			return nil, fmt.Errorf("%w: class %q has limit %d, below 1", ErrBadClass, d.Name, d.Limit)
		}
		if _, ok := c.byName[d.Name]; ok {
			return nil, fmt.Errorf("%w: %q", ErrDuplicateClass, d.Name)
		}
		c.byName[d.Name] = ClassID(i)
		c.classes[i] = class{name: d.Name, limit: d.Limit, parent: -1}
	}
	for i, d := range decls {
		if d.Parent == "" {
			continue
		}
		p, ok := c.byName[d.Parent]
		if !ok {
			return nil, fmt.Errorf("%w: %q, parent of %q", ErrUnknownClass, d.Parent, d.Name)
		}
		c.classes[i].parent = p
	}
	if at, ok := c.findCycle(); ok {
		return nil, fmt.Errorf("%w: through %q", ErrClassCycle, c.classes[at].name)
	}
	return c, nil
}

// findCycle returns a class on a cycle of parents, if there is one. It
// walks up from each class in turn, marking the path it is on, until it
// reaches a root or a class already known to lead to one (no cycle), or a
// class on the current path (a cycle); so it looks at each class once.
func (c *Classes) findCycle() (ClassID, bool) {
	const (
		unseen = iota
		onPath
		rooted // leads to a root
	)
	state := make([]uint8, len(c.classes))
	for i := range c.classes {
		id := ClassID(i)
		for id >= 0 && state[id] == unseen {
			state[id] = onPath
			id = c.classes[id].parent
		}
		if id >= 0 && state[id] == onPath {
			return id, true
		}
		for id := ClassID(i); id >= 0 && state[id] == onPath; id = c.classes[id].parent {
			state[id] = rooted
		}
	}
	return -1, false
}

// Len returns the number of classes.
func (c *Classes) Len() int { return len(c.classes) }

// ID returns the ClassID of the class named name, or an error wrapping
// ErrUnknownClass.
func (c *Classes) ID(name string) (ClassID, error) {
	id, ok := c.byName[name]
	if !ok {
		return -1, fmt.Errorf("%w: %q", ErrUnknownClass, name)
	}
	return id, nil
}

// Name returns the name of class id, or "" if there is no such class.
func (c *Classes) Name(id ClassID) string {
	if !c.valid(id) {
		return ""
	}
	return c.classes[id].name
}

// InFlight returns class id's requests in flight (its own and its
// descendants'), or an error wrapping ErrUnknownClass.
func (c *Classes) InFlight(id ClassID) (int, error) {
	if !c.valid(id) {
		return 0, c.unknown(id)
	}
	return c.classes[id].inFlight, nil
}

// Limit returns class id's own limit (Unlimited if it has none), or an
// error wrapping ErrUnknownClass.
func (c *Classes) Limit(id ClassID) (int, error) {
	if !c.valid(id) {
		return 0, c.unknown(id)
	}
	return c.classes[id].limit, nil
}

// Room returns how many more requests class id could book now: the least,
// over the class and its ancestors, of limit minus requests in flight (0 if
// any is full; if none has a limit, math.MaxInt less the most any of them
// has in flight). It fails with an error
// wrapping ErrUnknownClass.
func (c *Classes) Room(id ClassID) (int, error) {
	if !c.valid(id) {
		return 0, c.unknown(id)
	}
	room := math.MaxInt
	for ; id >= 0; id = c.classes[id].parent {
		cl := &c.classes[id]
		room = min(room, max(cl.limit-cl.inFlight, 0))
	}
	return room, nil
}

// Book books one request in class id: if neither the class nor any ancestor
// is at its limit, it counts the request in all of them and returns true;
// otherwise it changes nothing and returns false. It fails, changing
// nothing, with an error wrapping ErrUnknownClass.
func (c *Classes) Book(id ClassID) (bool, error) {
	full, err := c.blocker(id)
	if err != nil || full >= 0 {
		return false, err
	}
	c.classes[id].booked++
	for ; id >= 0; id = c.classes[id].parent {
		c.classes[id].inFlight++
	}
	return true, nil
}

// Release ends one booking made in class id, in it and every ancestor.
// Each successful Book is released exactly once, in the class it booked. It
// fails, changing nothing, with an error wrapping ErrUnknownClass, or
// ErrNotBooked if no booking made in class id itself is left (a class's
// descendants' bookings are theirs to release).
func (c *Classes) Release(id ClassID) error {
	if !c.valid(id) {
		return c.unknown(id)
	}
	if c.classes[id].booked == 0 {
		return fmt.Errorf("%w: class %q", ErrNotBooked, c.classes[id].name)
	}
	c.classes[id].booked--
	for ; id >= 0; id = c.classes[id].parent {
		c.classes[id].inFlight--
	}
	return nil
}

// blocker returns the nearest class on the path from id to its root that
// is at its limit, or -1 if none is.
func (c *Classes) blocker(id ClassID) (ClassID, error) {
	if !c.valid(id) {
		return -1, c.unknown(id)
	}
	for ; id >= 0; id = c.classes[id].parent {
		if cl := &c.classes[id]; cl.inFlight >= cl.limit {
			return id, nil
		}
	}
	return -1, nil
}

func (c *Classes) valid(id ClassID) bool { return id >= 0 && int(id) < len(c.classes) }

func (c *Classes) unknown(id ClassID) error {
	return fmt.Errorf("%w: id %d of %d", ErrUnknownClass, id, len(c.classes))
}

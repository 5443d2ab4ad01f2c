package limit

// Pass is one scheduling pass over senders, from the highest priority to the
// lowest, booking their classes as it goes (seed 003's priority tables).
// Once a pass finds a class full, directly or because an ancestor is, it
// does not check that class again until Reset, at this priority or any
// lower one: a class with no room for a high-priority sender has none for a
// lower-priority one either, and the answer stays the same for the whole
// pass even if a release frees a slot meanwhile, so one pass never lets a
// lower-priority sender of a class through after passing over a higher one.
//
// A Pass is not safe for concurrent use, nor for use concurrently with its
// Classes. The zero value is not usable; get one from Classes.NewPass.
type Pass struct {
	classes *Classes
	full    []bool // by ClassID: found full in this pass
}

// NewPass returns a pass over c that has found nothing full yet.
func (c *Classes) NewPass() *Pass { return &Pass{classes: c, full: make([]bool, len(c.classes))} }

// Reset starts a new pass: every class is checked afresh.
func (p *Pass) Reset() { clear(p.full) }

// Full reports whether this pass has found class id full (itself or an
// ancestor), without checking its count; false for an unknown id.
func (p *Pass) Full(id ClassID) bool {
	c := p.classes
	if !c.valid(id) {
		return false
	}
	for ; id >= 0; id = c.classes[id].parent {
		if p.full[id] {
			return true
		}
	}
	return false
}

// Admits reports whether a request of class id could book now: false if
// this pass has already found the class full, else whether the class and
// every ancestor are below their limits. Like Book, it remembers a class it
// finds full for the rest of the pass; unlike Book, it books nothing. A
// scheduler that books on send uses it to pick the sender to offer
// channels to. It fails with an error wrapping ErrUnknownClass.
func (p *Pass) Admits(id ClassID) (bool, error) {
	c := p.classes
	if !c.valid(id) {
		return false, c.unknown(id)
	}
	if p.Full(id) {
		p.full[id] = true
		return false, nil
	}
	blocker, _ := c.blocker(id)
	if blocker >= 0 {
		p.full[blocker], p.full[id] = true, true
		return false, nil
	}
	return true, nil
}

// Book books one request in class id unless this pass has already found it
// full. If the booking fails for want of room, the pass remembers the class
// that was full (id or the ancestor at its limit) and, for a quick answer
// next time, id itself. It fails, changing nothing, with an error wrapping
// ErrUnknownClass.
func (p *Pass) Book(id ClassID) (bool, error) {
	if ok, err := p.Admits(id); !ok {
		return false, err
	}
	return p.classes.Book(id)
}

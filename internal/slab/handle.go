package slab

// Handle names one slot holder. No Handle is zero, so callers may use 0 to
// mean "none".
//
// The low 32 bits are the slot plus one; the high 32 bits are the slot's
// generation, which Alloc advances, so a handle kept after its slot was
// freed and handed out again is detectably stale.
type Handle uint64

// Slot returns the number of the slot h names, for Slab.At.
func (h Handle) Slot() int32 { return int32(uint32(h)) - 1 }

// none marks a missing index in the int32 links (list ends, free nodes).
const none = -1

package slab

import "math"

// The slab's slots live in pages: a first page that starts small and
// doubles, then whole pages that never move.

// pageSize is the number of slots allocated at once once the first page is
// full. A fixed-size page makes finding a slot two bounds checks and two
// loads. 1024 slots of the request table's 56 bytes are exactly seven
// runtime pages; a smaller page of a type with pointers would carry an
// allocation header, and 512 such slots would round up to a size class a
// seventh larger.
//
// firstPage is the size of the first page when the first slot is handed
// out. Most slabs stay small (a scheduler of an overlay node has a few
// dozen requests out), and a full page would cost them 57 kB each; the
// first page doubles instead, up to pageSize. Moving its slots is why a
// value's pointer is valid only until the next Alloc; the copies add up to
// less than one page, once.
const (
	pageShift = 10
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
	firstPage = 16
)

func (s *Slab[V]) node(i int32) *node[V] { return &s.pages[i>>pageShift][i&pageMask] }

// grow appends a new slot.
func (s *Slab[V]) grow() (int32, *node[V]) {
	if s.slots == math.MaxInt32 {
		// Slots are int32 and handles store slot+1 in 32 bits.
		panic("slab: too many slots")
	}
	switch p := int(s.slots >> pageShift); {
	case p == len(s.pages):
		size := pageSize
		if p == 0 {
			size = firstPage
		}
		s.pages = append(s.pages, make([]node[V], size))
	case int(s.slots&pageMask) == len(s.pages[p]):
		// Only the first page is ever short of pageSize.
		bigger := make([]node[V], 2*len(s.pages[p]))
		copy(bigger, s.pages[p])
		s.pages[p] = bigger
	}
	i := s.slots
	s.slots++
	return i, s.node(i)
}

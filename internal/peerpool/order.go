package peerpool

// This file keeps Pool.order, a binary min-heap of the slots of peers that
// have at least one open channel, and picks the best channels from it.

import (
	"slices"

	"github.com/peersched/peersched/peer"
)

// less reports whether the peer at order[i] should be offered before the
// peer at order[j]: the ranking Best's candidates use, with nothing picked.
func (pl *Pool) less(i, j int) bool {
	return pl.candidateBefore(pl.candidate(pl.order[i]), pl.candidate(pl.order[j]))
}

func (pl *Pool) swap(i, j int) {
	o := pl.order
	o[i], o[j] = o[j], o[i]
	pl.records[o[i]].orderIndex = int32(i)
	pl.records[o[j]].orderIndex = int32(j)
}

func (pl *Pool) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !pl.less(i, parent) {
			return
		}
		pl.swap(i, parent)
		i = parent
	}
}

func (pl *Pool) down(i int) {
	n := len(pl.order)
	for {
		best := i
		if l := 2*i + 1; l < n && pl.less(l, best) {
			best = l
		}
		if r := 2*i + 2; r < n && pl.less(r, best) {
			best = r
		}
		if best == i {
			return
		}
		pl.swap(i, best)
		i = best
	}
}

func (pl *Pool) fix(i int) {
	pl.up(i)
	pl.down(i)
}

func (pl *Pool) pushOrder(slot int32) {
	pl.order = append(pl.order, slot)
	i := len(pl.order) - 1
	pl.records[slot].orderIndex = int32(i)
	pl.up(i)
}

func (pl *Pool) removeOrder(at int32) {
	i, last := int(at), len(pl.order)-1
	if i != last {
		pl.swap(i, last)
	}
	pl.records[pl.order[last]].orderIndex = -1
	pl.order = pl.order[:last]
	if i != last {
		pl.fix(i)
	}
}

// pickCandidate is a peer that Best may pick next, with how many of its
// channels it has picked already. It carries the peer's rank (closed plus
// picked, then RTT class and tie key) so that ordering candidates, the
// inner loop of Best, reads the candidate heap alone; only a tie on both
// goes to the records for the IDs.
type pickCandidate struct {
	slot   int32
	picked int32
	load   int32  // the peer's closed channels plus picked
	rank   uint64 // the peer's RTT class and tie key (see rank)
}

func (pl *Pool) candidate(slot int32) pickCandidate {
	r := &pl.records[slot]
	return pickCandidate{slot: slot, load: r.closed, rank: r.rank}
}

// Best appends to dst up to max open channels (all of them if max <= 0), best
// first. A peer with several open channels appears once per channel, each
// later copy ranked as if the earlier ones were already closed (but with
// the peer's tie key as it is now), so a sender that takes channels from the
// front spreads its load across peers.
//
// It walks the order heap from the root: a peer's heap children can only rank
// after it, so they join the candidates when it is first picked. Candidates
// wait in two queues. Peers not yet picked wait in a small heap. A picked peer
// with channels left goes to the back of a FIFO, ranked as if the channel just
// picked were closed: picks come out in rank order, so the FIFO stays in rank
// order too, and its front is its best. Each pick takes the better of the two
// fronts. When the peers are about equally loaded (the usual state of a busy
// node) most picks come from the FIFO at O(1); each peer's first pick costs
// O(log n). The whole is O(n log n) at worst for n channels returned,
// independent of the number of peers.
func (pl *Pool) Best(dst []Choice, max int) []Choice { return pl.BestOf(dst, max, nil, nil) }

// BestOf is Best over the channels of the peers in only (of every peer if
// only is empty) that are not in avoid: the same channels in the same
// order as Best lists them, less the others. With only, it starts from
// those peers instead of the heap's root, at O(k log k) for k of them; with
// avoid, it walks past the avoided peers, at O(log n) more for each.
func (pl *Pool) BestOf(dst []Choice, max int, only, avoid []peer.ID) []Choice {
	if max <= 0 || max > pl.open {
		max = pl.open
	}
	if max == 0 {
		return dst
	}
	// Grow dst once and fill it in place, field by field: appending a
	// Choice, which holds a string, goes through typedmemmove, and that
	// was a quarter of Best.
	base := len(dst)
	dst = slices.Grow(dst, max)[:base+max]
	if max == 1 && len(only) == 0 && len(avoid) == 0 {
		// The best channel is the first of the peer at the root: nothing
		// to rank. Under saturation every offer lists one channel, the one
		// that just reopened, so this is the common case.
		pl.fill(&dst[base], pl.order[0])
		return dst
	}
	fresh := pl.fresh[:0]
	if len(only) > 0 {
		for i, id := range only {
			slot, ok := pl.slotOf[id]
			if ok && pl.records[slot].open() > 0 && !slices.Contains(only[:i], id) && !slices.Contains(avoid, id) {
				fresh = pl.pushCandidate(fresh, pl.candidate(slot))
			}
		}
	} else {
		fresh = pl.pushCandidate(fresh, pl.candidate(pl.order[0]))
	}
	again, next := pl.again[:0], 0 // again[next:] is the FIFO
	picked := 0
	for picked < max {
		var c pickCandidate
		if next < len(again) && (len(fresh) == 0 || pl.candidateBefore(again[next], fresh[0])) {
			c = again[next]
			next++
		} else if len(fresh) > 0 {
			c = fresh[0]
			fresh = pl.popCandidate(fresh)
		} else {
			break // every open channel is listed
		}
		r := &pl.records[c.slot]
		if c.picked == 0 {
			if len(only) == 0 {
				at := int(r.orderIndex)
				for _, child := range [2]int{2*at + 1, 2*at + 2} {
					if child < len(pl.order) {
						fresh = pl.pushCandidate(fresh, pl.candidate(pl.order[child]))
					}
				}
			}
			if len(avoid) > 0 && slices.Contains(avoid, r.id) {
				continue // its children are candidates; it is not
			}
		}
		pl.fill(&dst[base+picked], c.slot)
		picked++
		if c.picked+1 < r.open() {
			c.picked++
			c.load++
			again = append(again, c)
		}
	}
	pl.fresh, pl.again = fresh[:0], again[:0]
	return dst[:base+picked]
}

// fill describes the open channel of the peer in slot in c.
func (pl *Pool) fill(c *Choice, slot int32) {
	r := &pl.records[slot]
	c.Ref, c.ID, c.Closed, c.Limit, c.RTT = Ref{slot: slot, incarnation: r.incarnation}, r.id, int(r.closed), int(r.limit), r.rtt
}

// candidateBefore is the ranking: fewer closed channels (picks counted as
// closed), then a faster response-time class, then the lower tie key (a
// sentKey orders after every TieKey), then the lower ID (two TieKeys are
// hardly ever equal, and two sentKeys never are).
func (pl *Pool) candidateBefore(a, b pickCandidate) bool {
	switch {
	case a.load != b.load:
		return a.load < b.load
	case a.rank != b.rank:
		return a.rank < b.rank
	}
	return pl.records[a.slot].id < pl.records[b.slot].id
}

func (pl *Pool) pushCandidate(h []pickCandidate, c pickCandidate) []pickCandidate {
	h = append(h, c)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !pl.candidateBefore(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
	return h
}

// popCandidate removes the best candidate from the heap h.
func (pl *Pool) popCandidate(h []pickCandidate) []pickCandidate {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	pl.siftDownCandidate(h, 0)
	return h
}

// siftDownCandidate moves the candidate at i down the heap h to its place.
func (pl *Pool) siftDownCandidate(h []pickCandidate, i int) {
	for {
		best := i
		if l := 2*i + 1; l < len(h) && pl.candidateBefore(h[l], h[best]) {
			best = l
		}
		if r := 2*i + 2; r < len(h) && pl.candidateBefore(h[r], h[best]) {
			best = r
		}
		if best == i {
			return
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
}

package peerpool

import "slices"

// This file lets an offer list its channels as Best would at the moment it
// is made while ranking only the first of them then: the rest are filled in
// when someone reads past the first, or just before the pool changes in a
// way that would change them, whichever comes first. A sender that sends
// on its offer's first channel and returns, the usual case, then costs one
// channel's listing instead of MaxOfferChannels'.
//
// Every method that changes what Best lists (a peer's load, limit,
// allowance, response time or rank, a peer coming or going, the seed)
// first fills in an owed listing, with one exception: the first Close
// after the listing is recorded, not filled for, because it is the offer's
// own send on its first channel. Filling then undoes that Close, ranks the
// channels as they were, and does it again; a second Close fills first.

// owedListing is a listing whose channels after the first are owed.
type owedListing struct {
	list []Choice // list[0] is filled; list[1:] are owed; nil if none is
	// closed is set once a Close was recorded, and undo describes it;
	// both mean nothing while list is nil.
	closed bool
	undo   closeRecord
}

// closeRecord is what one Close changed in the record of the peer in slot:
// the values before and after.
type closeRecord struct {
	slot                          int32
	closedBefore, allowanceBefore int32
	rankBefore                    uint64
	closedAfter, allowanceAfter   int32
	rankAfter                     uint64
}

// BestDeferred is Best(dst, max) for an empty dst, but fills in only the
// first channel now: the others are owed, listed as Best would have
// listed them now, and filled in by FillListing (or before any change to
// the pool that would change them) into the returned slice's own array,
// which the caller must neither change nor let go of until it has called
// FillListing or ForgetListing. Only one listing is owed at a time:
// another BestDeferred forgets the one before.
func (pl *Pool) BestDeferred(dst []Choice, max int) []Choice {
	pl.owed.list = nil
	if max <= 0 || max > pl.open {
		max = pl.open
	}
	dst = dst[:0]
	if max == 0 {
		return dst
	}
	dst = slices.Grow(dst, max)[:max]
	// The best channel is the first of the peer at the order's root.
	pl.fill(&dst[0], pl.order[0])
	if max > 1 {
		pl.owed.list, pl.owed.closed = dst, false
	}
	return dst
}

// FillListing fills in the channels an owed listing still owes, as they
// were when it was taken; it does nothing if none is owed.
func (pl *Pool) FillListing() {
	if pl.owed.list == nil {
		return
	}
	list, closed := pl.owed.list, pl.owed.closed
	pl.owed.list = nil
	if closed {
		pl.undoClose(&pl.owed.undo)
	}
	// The pool is as it was when the listing was taken, so Best lists as
	// many channels again, into list's own array (its capacity is enough),
	// the first of them the one listed then.
	pl.BestOf(list[:0], len(list), nil, nil)
	if closed {
		pl.redoClose(&pl.owed.undo)
	}
}

// ForgetListing drops an owed listing without filling it in: no one will
// read its channels past the first.
func (pl *Pool) ForgetListing() { pl.owed.list = nil }

// settle fills in an owed listing before a change to the pool.
func (pl *Pool) settle() {
	if pl.owed.list != nil {
		pl.FillListing()
	}
}

// recordClose notes, for the owed listing, that the peer in slot, whose
// record is r, is about to be closed by Close: only one Close is
// recorded; before another, the listing is filled in.
func (pl *Pool) recordClose(slot int32, r *record) {
	if pl.owed.closed {
		pl.FillListing()
		return
	}
	pl.owed.closed = true
	pl.owed.undo = closeRecord{slot: slot, closedBefore: r.closed, allowanceBefore: r.allowance, rankBefore: r.rank}
}

// closeDone completes the record of the Close recordClose noted, with the
// values it left.
func (pl *Pool) closeDone(r *record) {
	if pl.owed.list != nil && pl.owed.closed {
		u := &pl.owed.undo
		u.closedAfter, u.allowanceAfter, u.rankAfter = r.closed, r.allowance, r.rank
	}
}

// undoClose puts the pool back as it was before the Close u describes.
// The order may end in another arrangement of its heap, which Best does
// not see: it lists the channels in one total order however the heap is
// arranged.
func (pl *Pool) undoClose(u *closeRecord) {
	r := &pl.records[u.slot]
	r.closed, r.allowance, r.rank = u.closedBefore, u.allowanceBefore, u.rankBefore
	pl.open++
	pl.closed--
	if r.orderIndex < 0 {
		pl.pushOrder(u.slot)
	} else {
		pl.up(int(r.orderIndex))
	}
}

// redoClose does again the Close u describes, after undoClose.
func (pl *Pool) redoClose(u *closeRecord) {
	r := &pl.records[u.slot]
	r.closed, r.allowance, r.rank = u.closedAfter, u.allowanceAfter, u.rankAfter
	pl.closedOne(r)
}

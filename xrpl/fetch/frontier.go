package fetch

import (
	"slices"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/ledger"
)

// frontier knows the node hashes the fetch has discovered and not yet
// verified: waiting to be asked, or asked (in a request in flight). It is a
// plain data structure with no locks, no clock and no I/O; a strategy owns
// one and guards it.
//
// A verified hash is counted and forgotten: a ledger is a tree whose every
// node has one parent, so a verified hash is never discovered again, and
// remembering every hash ever seen would make the fetch's memory grow with
// the ledger (about 80 bytes a node). For the same reason a waiting hash is
// kept only in its queue, not looked up: only the hashes asked, as many as
// the requests in flight carry, are in a map. A map of every hash pending
// took a sixth of the fetcher's CPU (three lookups a node, each a cache
// miss in a map of half a million hashes, 24 MB at four million leaves,
// which Go's maps keep at their largest). A hash discovered again while it
// waits (never, in a tree) waits twice and is asked once: take drops a
// hash already asked.
//
// Waiting hashes sit in two queues. Retries (hashes whose request failed, or
// that came back missing or bad) go first; fresh hashes (never asked) form
// a stack, the most recently discovered taken first, so the fetch walks the
// tree depth first: it finishes the subtrees it has begun before opening
// new ones, which bounds the hashes waiting by the tree's depth times its
// fan-out times the requests in flight, not by the width of its widest
// level (breadth first, the whole leaf level would wait at once). Each hash
// that has failed remembers the last few peers that failed it, so that take
// can send it elsewhere: remembering only the last one would bounce a hash
// between two bad peers.
type frontier struct {
	asked    map[ledger.Hash]struct{} // in requests in flight
	fresh    []ledger.Hash            // fresh[head:] wait, oldest first
	head     int
	retry    []ledger.Hash
	failedAt map[ledger.Hash][]peer.ID // for hashes that failed and are not verified
	verified int
	reused   int // subtrees taken from the base or the store instead of discovered
}

// maxFailedAt bounds how many failing peers a hash remembers. Past it the
// oldest is forgotten, so a hash that every peer has failed once gets asked
// around again rather than never.
const maxFailedAt = 8

func newFrontier() *frontier {
	return &frontier{
		asked:    make(map[ledger.Hash]struct{}),
		failedAt: make(map[ledger.Hash][]peer.ID),
	}
}

// discover adds h as waiting, unless it is asked, and reports whether it
// added it. A hash verified before is not remembered, and one waiting is
// not looked for (see frontier): either would be taken as new, which in a
// tree does not happen.
func (f *frontier) discover(h ledger.Hash) bool {
	if _, ok := f.asked[h]; ok {
		return false
	}
	f.fresh = append(f.fresh, h)
	return true
}

// take appends to dst up to max waiting hashes to ask peer to, marks them
// asked, and returns dst. Retries come first, except those that peer has
// failed before; those are taken only if anyPeer is set (when nobody else is
// going to ask for them soon). Then fresh hashes, the most recently
// discovered ones, in the order they were discovered (siblings together).
// A hash taken that is asked already (discovered twice) is dropped.
func (f *frontier) take(dst []ledger.Hash, max int, to peer.ID, anyPeer bool) []ledger.Hash {
	start := len(dst)
	if len(f.retry) > 0 {
		keep := f.retry[:0]
		for _, h := range f.retry {
			if len(dst) < max && (anyPeer || !f.failedBy(h, to)) {
				dst = append(dst, h)
			} else {
				keep = append(keep, h)
			}
		}
		f.retry = keep
	}
	if n := min(max-len(dst), len(f.fresh)-f.head); n > 0 {
		if len(f.fresh)-f.head < wideEnough {
			dst = append(dst, f.fresh[f.head:f.head+n]...)
			clear(f.fresh[f.head : f.head+n])
			f.head += n
		} else {
			top := len(f.fresh) - n
			dst = append(dst, f.fresh[top:]...)
			f.fresh = f.fresh[:top]
		}
	}
	taken := dst[:start]
	for _, h := range dst[start:] {
		if _, ok := f.asked[h]; !ok {
			f.asked[h] = struct{}{}
			taken = append(taken, h)
		}
	}
	dst = taken
	if f.head == len(f.fresh) {
		f.fresh, f.head = f.fresh[:0], 0
	} else if f.head > 4096 && f.head*2 > len(f.fresh) {
		n := copy(f.fresh, f.fresh[f.head:])
		f.fresh, f.head = f.fresh[:n], 0
	}
	if cap(f.fresh) > 4*wideEnough && (len(f.fresh)-f.head)*4 < cap(f.fresh) {
		// Give back the queue's memory once it has shrunk well below
		// what it once needed; the hashes already taken go with it.
		f.fresh, f.head = slices.Clip(slices.Clone(f.fresh[f.head:])), 0
	}
	return dst
}

// takeSized is take into a new slice just large enough for what waits. A
// request's hashes go with it, so the slice is never reused, and one of a
// whole batch would be mostly empty when few hashes wait, as they do
// towards a fetch's end (in an overlay of thousands of fetches, half of
// everything allocated).
func (f *frontier) takeSized(max int, to peer.ID, anyPeer bool) []ledger.Hash {
	return f.take(make([]ledger.Hash, 0, min(max, f.waitingCount())), max, to, anyPeer)
}

// putBack returns asked hashes that were not answered usefully to the front
// of the waiting hashes, to be asked again preferably of a peer that has not
// failed them, such as failed, and returns how many it put back. Hashes not
// currently asked are ignored.
//
// A peer that fails a hash it had failed before was asked only because
// every peer the hash remembers had failed it (take's anyPeer): the hash's
// memory then starts again with that peer alone, so that every other peer
// may be asked for it again. (Kept, the memory would hand the hash to the
// anyPeer pass alone, whose first offered channel is its fastest peer's,
// over and over; a peer that was behind when it failed the hash may hold
// it now.)
func (f *frontier) putBack(hashes []ledger.Hash, failed peer.ID) int {
	n := 0
	for _, h := range hashes {
		if _, ok := f.asked[h]; !ok {
			continue
		}
		at := f.failedAt[h]
		switch {
		case slices.Contains(at, failed):
			f.failedAt[h] = append(at[:0], failed)
		case len(at) == maxFailedAt:
			f.failedAt[h] = append(append(at[:0], at[1:]...), failed)
		default:
			f.failedAt[h] = append(at, failed)
		}
		delete(f.asked, h)
		f.retry = append(f.retry, h)
		n++
	}
	return n
}

// failedBy reports whether peer p has failed hash h (among the last few
// peers that did).
func (f *frontier) failedBy(h ledger.Hash, p peer.ID) bool {
	return slices.Contains(f.failedAt[h], p)
}

// verify marks an asked hash verified, forgetting it, and reports whether
// it was asked.
func (f *frontier) verify(h ledger.Hash) bool {
	if _, ok := f.asked[h]; !ok {
		return false
	}
	delete(f.asked, h)
	f.verified++
	delete(f.failedAt, h)
	return true
}

// waitingCount returns how many hashes wait to be asked.
func (f *frontier) waitingCount() int { return len(f.fresh) - f.head + len(f.retry) }

// pendingCount returns how many hashes wait or are asked.
func (f *frontier) pendingCount() int { return len(f.asked) + f.waitingCount() }

// known returns how many hashes have been discovered: verified or pending.
func (f *frontier) known() int { return f.verified + f.pendingCount() }

// reuse records a subtree the fetch takes from its base or its store: its
// root is not discovered, and never asked for.
func (f *frontier) reuse() { f.reused++ }

// complete reports whether every discovered hash is verified, and the tree
// has begun: something was verified or taken from the base or the store.
func (f *frontier) complete() bool {
	return (f.verified > 0 || f.reused > 0) && f.pendingCount() == 0
}

// wideEnough is how many fresh hashes must wait before take turns from
// the oldest (breadth first: the shallowest, whose answers bring the most
// new hashes) to the newest (depth first). Below it, the fetch needs work
// more than it needs to save memory: a fetch through many peers has
// thousands of hashes in flight, and a frontier narrower than that leaves
// channels idle.
var wideEnough = 16384

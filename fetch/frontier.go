package fetch

import (
	"slices"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/peer"
)

// frontier knows every node hash the fetch has discovered and what became of
// it: waiting to be asked, asked (in a request in flight), or verified. It is
// a plain data structure with no locks, no clock and no I/O; a strategy owns
// one and guards it.
//
// Waiting hashes sit in two queues. Retries (hashes whose request failed, or
// that came back missing or bad) go first; fresh hashes (never asked) follow
// in discovery order, which walks the tree breadth first and so widens the
// frontier as fast as the tree allows. Each hash that has failed remembers
// the last few peers that failed it, so that take can send it elsewhere:
// remembering only the last one would bounce a hash between two bad peers.
type frontier struct {
	status   map[ledger.Hash]status
	fresh    []ledger.Hash // fresh[head:] are waiting
	head     int
	retry    []ledger.Hash
	failedAt map[ledger.Hash][]peer.ID // for hashes that failed and are not verified
	asked    int                       // hashes in requests in flight
	verified int
	reused   int // subtrees taken from the base instead of discovered
}

// maxFailedAt bounds how many failing peers a hash remembers. Past it the
// oldest is forgotten, so a hash that every peer has failed once gets asked
// around again rather than never.
const maxFailedAt = 8

type status uint8

const (
	waiting status = iota + 1
	asked
	verified
)

func newFrontier() *frontier {
	return &frontier{
		status:   make(map[ledger.Hash]status),
		failedAt: make(map[ledger.Hash][]peer.ID),
	}
}

// discover adds h as waiting, unless it is already known. It reports whether
// h was new.
func (f *frontier) discover(h ledger.Hash) bool {
	if _, ok := f.status[h]; ok {
		return false
	}
	f.status[h] = waiting
	f.fresh = append(f.fresh, h)
	return true
}

// take appends to dst up to max waiting hashes to ask peer to, marks them
// asked, and returns dst. Retries come first, except those that peer has
// failed before; those are taken only if anyPeer is set (when nobody else is
// going to ask for them soon). Then fresh hashes, in discovery order.
func (f *frontier) take(dst []ledger.Hash, max int, to peer.ID, anyPeer bool) []ledger.Hash {
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
	for len(dst) < max && f.head < len(f.fresh) {
		dst = append(dst, f.fresh[f.head])
		f.head++
	}
	if f.head == len(f.fresh) {
		f.fresh, f.head = f.fresh[:0], 0
	} else if f.head > 4096 && f.head*2 > len(f.fresh) {
		// Drop the taken prefix now and then, so the queue's memory
		// follows the hashes waiting, not every hash ever discovered.
		n := copy(f.fresh, f.fresh[f.head:])
		f.fresh, f.head = f.fresh[:n], 0
	}
	for _, h := range dst {
		f.status[h] = asked
	}
	f.asked += len(dst)
	return dst
}

// putBack returns asked hashes that were not answered usefully to the front
// of the waiting hashes, to be asked again preferably of a peer that has not
// failed them, such as failed, and returns how many it put back. Hashes not
// currently asked are ignored.
func (f *frontier) putBack(hashes []ledger.Hash, failed peer.ID) int {
	n := 0
	for _, h := range hashes {
		if f.status[h] != asked {
			continue
		}
		at := f.failedAt[h]
		if !slices.Contains(at, failed) {
			if len(at) == maxFailedAt {
				at = append(at[:0], at[1:]...)
			}
			f.failedAt[h] = append(at, failed)
		}
		f.status[h] = waiting
		f.asked--
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

// verify marks an asked hash verified and reports whether it was asked.
func (f *frontier) verify(h ledger.Hash) bool {
	if f.status[h] != asked {
		return false
	}
	f.status[h] = verified
	f.asked--
	f.verified++
	delete(f.failedAt, h)
	return true
}

// waitingCount returns how many hashes wait to be asked.
func (f *frontier) waitingCount() int { return len(f.fresh) - f.head + len(f.retry) }

// known returns how many hashes have been discovered.
func (f *frontier) known() int { return len(f.status) }

// reuse records a subtree the fetch takes from its base: its root is not
// discovered, and never asked for.
func (f *frontier) reuse() { f.reused++ }

// complete reports whether every discovered hash is verified, and the tree
// has begun: something was verified or taken from the base.
func (f *frontier) complete() bool {
	return (f.verified > 0 || f.reused > 0) && f.verified == len(f.status)
}

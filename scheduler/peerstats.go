package scheduler

import (
	"cmp"
	"slices"
	"time"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
)

// DefaultKeepDepartedPeers is Config.KeepDepartedPeers' default.
const DefaultKeepDepartedPeers = 64

// PeerStats is one peer's counters and response times: Counters as Stats
// has them, counted over the messages sent to this peer and the responses
// and refusals it sent (a response dropped because it came from the wrong
// peer counts against the peer that sent it). A PeerStats is a plain
// value: the scheduler hands out copies.
type PeerStats struct {
	ID peer.ID
	// Connected is false for a peer that has disconnected and whose
	// counters are still kept (see Config.KeepDepartedPeers).
	Connected bool
	// Since is when the counters started from zero: when the peer
	// connected, or, if it reconnected while its counters were kept, when
	// it connected before that. Counters that start again from zero (the
	// peer's were forgotten, and it came back) have a later Since, so an
	// exporter can tell the restart from a counter going down: it is the
	// created timestamp of a Prometheus counter.
	Since time.Time

	Counters
}

// A peer's counters live in a peerRecord from its first connection. While
// it is connected, its record is found from the Ref of each message's
// channel by slot (one index and one comparison on the hot path); a
// message that outlives its connection (one whose send was still running
// when the peer left) and a response, found by the sender's ID, go through
// the map. When the peer disconnects, its record stays, departed, in a list
// oldest first; a reconnection takes it back, so its counters go on, and
// past Config.KeepDepartedPeers the oldest departed record is forgotten:
// its counts move to the scheduler's others, and a message or response
// that names an ID with no record counts there too. The scheduler's total
// counts are thus always the sum of every record's and the others'.

// peerRecord is one peer's counters; the scheduler's offers lock guards it.
type peerRecord struct {
	counts messageCounts
	id     peer.ID
	ref    peerpool.Ref  // the connection counting here; zero while departed
	since  time.Duration // since the scheduler's epoch
	// older and newer link the departed records, oldest first.
	older, newer *peerRecord
}

// peerRecords holds the records. The zero value is empty and ready to use;
// the scheduler guards it with its offers lock.
type peerRecords struct {
	bySlot   []*peerRecord // the connected peers' records, by Ref.Slot
	byID     map[peer.ID]*peerRecord
	oldest   *peerRecord // departed records, oldest first
	newest   *peerRecord
	departed int
	keep     int // departed records kept at most
	others   messageCounts
}

// of returns the counts of the peer named id, whose connection was ref
// when the message was sent; ref may be zero, or stale.
func (pr *peerRecords) of(ref peerpool.Ref, id peer.ID) *messageCounts {
	if slot := ref.Slot(); slot < len(pr.bySlot) {
		if r := pr.bySlot[slot]; r != nil && r.ref == ref {
			return &r.counts
		}
	}
	return pr.ofID(id)
}

// ofID returns the counts of the peer named id.
func (pr *peerRecords) ofID(id peer.ID) *messageCounts {
	if r := pr.byID[id]; r != nil {
		return &r.counts
	}
	return &pr.others
}

// connected gives the peer named id, just connected as ref at now, its
// record: the one it had, if kept, or a new one.
func (pr *peerRecords) connected(ref peerpool.Ref, id peer.ID, now time.Duration) {
	r := pr.byID[id]
	if r != nil {
		pr.unlink(r)
	} else {
		r = &peerRecord{id: id, since: now}
		if pr.byID == nil {
			pr.byID = make(map[peer.ID]*peerRecord)
		}
		pr.byID[id] = r
	}
	r.ref = ref
	slot := ref.Slot()
	if slot >= len(pr.bySlot) {
		pr.bySlot = append(pr.bySlot, make([]*peerRecord, slot+1-len(pr.bySlot))...)
	}
	pr.bySlot[slot] = r
}

// disconnected marks the peer connected as ref departed, and forgets the
// oldest departed record if more are kept than allowed.
func (pr *peerRecords) disconnected(ref peerpool.Ref) {
	slot := ref.Slot()
	if slot >= len(pr.bySlot) || pr.bySlot[slot] == nil || pr.bySlot[slot].ref != ref {
		return
	}
	r := pr.bySlot[slot]
	pr.bySlot[slot] = nil
	r.ref = peerpool.Ref{}
	r.older, r.newer = pr.newest, nil
	if pr.newest != nil {
		pr.newest.newer = r
	} else {
		pr.oldest = r
	}
	pr.newest = r
	pr.departed++
	for pr.departed > pr.keep {
		old := pr.oldest
		pr.unlink(old)
		delete(pr.byID, old.id)
		pr.others.add(&old.counts)
	}
}

// unlink takes the departed record r out of the list.
func (pr *peerRecords) unlink(r *peerRecord) {
	if r.older != nil {
		r.older.newer = r.newer
	} else {
		pr.oldest = r.newer
	}
	if r.newer != nil {
		r.newer.older = r.older
	} else {
		pr.newest = r.older
	}
	r.older, r.newer = nil, nil
	pr.departed--
}

// stats appends every record to dst, in no fixed order; epoch is the
// scheduler's.
func (pr *peerRecords) stats(dst []PeerStats, epoch time.Time) []PeerStats {
	for _, r := range pr.byID {
		dst = append(dst, PeerStats{ID: r.id, Connected: r.ref != peerpool.Ref{}, Since: epoch.Add(r.since), Counters: r.counts.counters()})
	}
	return dst
}

// PeerStats appends to dst the counters of every connected peer, and of
// the departed peers whose counters are kept (see
// Config.KeepDepartedPeers), sorted by ID, and returns the extended slice.
// It is a consistent snapshot: every entry was read at the same moment.
// Pass the slice of an earlier call, emptied (dst[:0]), to reuse its
// memory.
//
// A peer's counters start when it first connects and go on across a
// disconnection and a reconnection while they are kept; once forgotten,
// they count only in Stats' totals, and start again from zero (with a
// later Since) if the peer comes back. Stats' counters are therefore each
// at least the sum of the peers' here, and equal to it as long as no
// departed peer has been forgotten and no response has come from a peer
// that never connected.
func (s *Scheduler) PeerStats(dst []PeerStats) []PeerStats {
	start := len(dst)
	s.offersMu.Lock()
	dst = s.peers.stats(dst, s.epoch)
	s.offersMu.Unlock()
	slices.SortFunc(dst[start:], func(a, b PeerStats) int { return cmp.Compare(a.ID, b.ID) })
	return dst
}

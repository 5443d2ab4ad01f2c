package offerqueue

import "github.com/peersched/peersched/peer"

// wants are a sender's terms for the channels it is offered (see Options).
type wants struct {
	only  []peer.ID // deduplicated, without the avoided peers; empty for any
	avoid []peer.ID // deduplicated
	need  int       // channels that must be open and wanted: at least 1
}

// Channels is what the queue needs to know of the open channels to match
// senders' wants: how many are open, in all and per peer. A peerpool.Pool is
// Channels.
type Channels interface {
	Open() int
	OpenOf(id peer.ID) int
}

// SetWants records the wants of the sender named t (see Options): it is
// offered channels only when at least minChannels (at least one) channels
// are open to peers in only (any peer if only is empty) that are not in
// avoid, and then only those. The slices are copied. It does nothing if t
// is not waiting. A call with no wants leaves any recorded before. A sender
// whose wants no peer could meet (every peer in only avoided) is the
// caller's to refuse: its only would be dropped, and it would be offered
// any peer it does not avoid.
func (q *Queue) SetWants(t Ticket, only, avoid []peer.ID, minChannels int) {
	if len(only) == 0 && len(avoid) == 0 && minChannels <= 1 {
		return // no wants: nothing to record, nothing to look up
	}
	_, node := q.lookup(t)
	if node == nil {
		return
	}
	w := &wants{need: max(minChannels, 1)}
	for _, id := range avoid {
		if !contains(w.avoid, id) {
			w.avoid = append(w.avoid, id)
		}
	}
	for _, id := range only {
		if !contains(w.only, id) && !contains(w.avoid, id) {
			w.only = append(w.only, id)
		}
	}
	node.wants = w
}

// Wants returns the peers the sender named t wants channels of (nil: any)
// and those it avoids, as SetWants recorded them; the caller must not
// change them.
func (q *Queue) Wants(t Ticket) (only, avoid []peer.ID) {
	if _, node := q.lookup(t); node != nil && node.wants != nil {
		return node.wants.only, node.wants.avoid
	}
	return nil, nil
}

func contains(ids []peer.ID, id peer.ID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// met reports whether the open channels meet w.
func (w *wants) met(open Channels) bool {
	n := 0
	if len(w.only) > 0 {
		for _, id := range w.only {
			n += open.OpenOf(id)
		}
	} else {
		n = open.Open()
		for _, id := range w.avoid {
			n -= open.OpenOf(id)
		}
	}
	return n >= w.need
}

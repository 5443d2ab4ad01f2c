package overlay

import (
	"github.com/peersched/peersched/xrpl/penalty"
	"github.com/peersched/peersched/xrpl/resource"
	"github.com/peersched/peersched/xrpl/simnet"
)

// The limits every node puts on each neighbour that asks it, as a rippled
// peer does (package resource): each query costs resource.FeeQuery in the
// serving node's accounts of the asking one; a query that finds
// resource.DropSendQueue answers queued on its link is dropped unanswered,
// for resource.FeeTrivial; an answer carries at most
// resource.MaxReplyObjects objects; and when the asking node's balance
// reaches resource.DropThreshold the serving node cuts the link. The asking
// node learns of it one link latency later, is disconnected from the
// neighbour, and redials as tcpnet's Client would (simnet's redial
// defaults), each redial refused, and charged resource.FeeDrop, while the
// balance stays at the threshold.

// charge charges l.from fee at l.to, and cuts the link if that reaches the
// drop threshold.
func (s *simulation) charge(l *link, fee resource.Fee) {
	if l.cut || l.to.accounts.Charge(string(l.from.id), fee) != resource.Drop {
		return
	}
	l.cut = true
	u := l.from
	s.clock.at(l.latency, func() {
		if u.fetching {
			_ = u.host.Disconnect(l.to.id) // as any lost connection
		}
		s.redial(l, 1)
	})
}

// redial schedules l.from's next dial of l.to after strikes failures in a
// row, as tcpnet.Client backs off; a dial let in connects a new link to the
// host, and one refused backs off further.
func (s *simulation) redial(l *link, strikes int) {
	wait := penalty.Jittered(penalty.Backoff(simnet.DefaultRedialMin, simnet.DefaultRedialMax, strikes), s.redials.Float64())
	s.clock.at(wait, func() {
		u, v := l.from, l.to
		if !u.fetching {
			return // done: it no longer dials anyone
		}
		// The dial's handshake reaches v one latency later; its answer
		// comes back after another.
		s.clock.at(l.latency, func() {
			admitted := v.accounts.Admit(string(u.id))
			s.clock.at(l.latency, func() {
				if !u.fetching {
					return
				}
				if !admitted {
					s.redial(l, strikes+1)
					return
				}
				fresh := &link{sim: s, from: u, to: v, latency: l.latency}
				if err := u.connect(fresh); err != nil {
					// The host still holds the old one, or has stopped:
					// try again later.
					s.redial(l, strikes+1)
				}
			})
		})
	})
}

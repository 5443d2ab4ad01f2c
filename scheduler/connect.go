package scheduler

import (
	"fmt"
	"reflect"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/requests"
	"github.com/peersched/peersched/peer"
)

// Connect adds a peer with a fixed limit of the given number of channels, all
// open, and offers them to waiting senders. It fails, changing nothing, with
// peer.ErrNilPeer, peer.ErrBadChannels, peer.ErrTooManyChannels,
// peer.ErrAlreadyConnected (a peer with the same ID is connected) or
// ErrStopped.
func (s *Scheduler) Connect(p peer.Peer, channels int) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	return s.connect(p, func(id peer.ID) (peerpool.Ref, error) { return s.pool.Connect(p, id, channels) })
}

// ConnectWith adds a peer whose limit (how many messages it may have in
// flight, its channels) is decided by opts: by default it adapts, starting
// at a few channels and following what the scheduler observes of the peer
// (see peer.Options and limit.Vegas). Its channels are offered to waiting
// senders at once.
//
// The peer's Limiter sees every request to the peer that is answered
// (limit.Answered), times out (limit.TimedOut) or is refused by the peer
// (limit.Failed, see Refuse), with its response time and the peer's load
// when it ended; requests that end otherwise (disconnect, stop, a send the
// host refused, an answer that came while the host's Send had not
// returned) say nothing about the peer's capacity and are not shown to it,
// nor are notifications. A lower limit never cancels a message in flight: the
// peer's channels stay closed as their messages end, until it is within its
// limit. PeerUsage reports each peer's current limit.
//
// A peer connected with a Rate (peer.Options.Rate) is also paced: it is
// never offered more channels than its rate pays for at that moment, each
// counted at the dearest cost a sender has declared (offer.Options.Cost)
// or the Rate's Cost if that is more, so no send through an offer takes it
// over its rate. Each message is charged what its sender declared it
// costs, or the Rate's Cost if it declared nothing. While its rate pays
// for no message, its channels stay closed to offers (PeerUsage shows them
// neither open nor closed) and senders wait, without errors; when it pays
// for one again (the scheduler arms its timer for that instant) its
// channels are offered at once. A send the host refuses gives its charge
// back, exactly.
//
// A panic in the Limiter's Limit when ConnectWith first reads it is
// recovered, logged and counted in Stats.PanicsHandled, as every panic in
// a Limiter is, and the peer is not connected: ConnectWith returns
// ErrLimiterPanicked. (A later panic, in Observe or in Limit after it,
// leaves the peer its limit: see peer.Options.)
//
// It fails, changing nothing, with peer.ErrNilPeer, limit.ErrBadBounds,
// limit.ErrBadRate, ErrBadCost (a Rate whose Burst is below a cost a
// sender has declared: the peer could never pay for that sender's
// messages), ErrLimiterPanicked, peer.ErrAlreadyConnected or
// ErrStopped.
func (s *Scheduler) ConnectWith(p peer.Peer, opts peer.Options) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	pacer, err := opts.NewPacer()
	if err != nil {
		return err
	}
	l, err := opts.NewLimiter()
	if err != nil {
		return err
	}
	start, panicked := peerpool.FirstLimit(l) // host code, perhaps: ask before taking any lock
	if panicked != nil {
		s.panics.Add(1)
		s.logLimiterPanic(panicked)
		return fmt.Errorf("%w: Limit, read at connect, panicked: %v", ErrLimiterPanicked, panicked.Value)
	}
	return s.connect(p, func(id peer.ID) (peerpool.Ref, error) {
		if pacer != nil {
			if err := pacer.RaiseDearest(s.dearest); err != nil {
				return peerpool.Ref{}, fmt.Errorf("%w: the rate's burst of %d is below a cost a sender declared, %d units",
					ErrBadCost, opts.Rate.Burst, s.dearest)
			}
		}
		ref, err := s.pool.ConnectLimited(p, id, l, start)
		if err == nil && pacer != nil {
			s.paceLocked(ref, pacer, s.now())
		}
		return ref, err
	})
}

// connect adds p to the pool with add, which is called with p's ID under the
// offers lock, and offers its channels.
func (s *Scheduler) connect(p peer.Peer, add func(peer.ID) (peerpool.Ref, error)) error {
	id := p.ID() // host code: ask before taking any lock
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return ErrStopped
	}
	ref, err := add(id)
	if err != nil {
		s.offersMu.Unlock()
		return fmt.Errorf("%w: %q", err, id)
	}
	s.peers.connected(ref, id, s.now())
	s.requestsMu.Lock()
	s.table.Register(ref, id)
	s.requestsMu.Unlock()
	s.unlockAndWantOffers()
	return nil
}

// Disconnect removes the peer named id. Its pending requests fail at once
// with reason Disconnected, at a cost proportional to their number; its
// channels are never offered again. It fails with peer.ErrUnknownPeer or
// ErrStopped.
func (s *Scheduler) Disconnect(id peer.ID) error { return s.disconnect(id, nil) }

// DisconnectPeer is Disconnect for one connection: it removes p only if p
// is the peer connected under p.ID(), the very value Connect or ConnectWith
// was given (compared with ==). A host whose connections to one peer can
// overlap, such as a new stream or socket connected while the old one's
// reader has yet to report its end, calls it when a connection ends, so
// that a late end of an old connection never removes its successor.
//
// It fails, changing nothing, with peer.ErrNilPeer, peer.ErrIncomparablePeer
// (p cannot be compared with ==: its dynamic type is a slice, map or
// func, or holds one, directly or in an interface field; use a pointer),
// peer.ErrUnknownPeer
// (nothing is connected under p's ID), peer.ErrNotThatPeer (another value
// is) or ErrStopped.
func (s *Scheduler) DisconnectPeer(p peer.Peer) error {
	if p == nil {
		return peer.ErrNilPeer
	}
	// The value, not its type: a struct with an interface field is of a
	// comparable type, but == panics on it when the field holds, say, a
	// slice, and it would panic under the offers lock.
	if !reflect.ValueOf(p).Comparable() {
		return fmt.Errorf("%w: %T", peer.ErrIncomparablePeer, p)
	}
	return s.disconnect(p.ID(), p) // host code: ask before taking any lock
}

// disconnect removes the peer connected under id, if it is p or p is nil.
func (s *Scheduler) disconnect(id peer.ID, p peer.Peer) error {
	s.offersMu.Lock()
	if s.stopped {
		s.offersMu.Unlock()
		return ErrStopped
	}
	ref, err := s.pool.DisconnectIf(id, p)
	if err != nil {
		s.offersMu.Unlock()
		return fmt.Errorf("%w: %q", err, id)
	}
	s.requestsMu.Lock()
	s.finished = s.table.FailPeer(ref, s.finished[:0])
	s.callbacksMu.Lock()
	for i := range s.finished {
		f := &s.finished[i]
		s.settleEndedLocked(f) // a notification's channel just goes with its peer
		*f = requests.Finished{}
	}
	s.callbacksMu.Unlock()
	s.peers.disconnected(ref) // after counting its failed requests
	if s.paced {
		s.unpaceLocked(ref)
	}
	s.requestsMu.Unlock()
	s.offersMu.Unlock()
	s.afterReopening(s.gated) // the peer's messages freed budget
	return nil
}

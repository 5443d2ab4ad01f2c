package scheduler

import (
	"cmp"
	"slices"

	"github.com/peersched/peersched/peer"
)

// Stats is a consistent snapshot of the scheduler: every field was read at
// the same moment. Its Counters only grow; PeerStats has them by peer.
type Stats struct {
	Peers          int // connected peers
	ChannelsOpen   int // channels that may carry a message now
	ChannelsClosed int // channels carrying a request, or digesting a notification
	SendersWaiting int // in the queue, parked ones included
	// SendersParked counts the waiting senders that sent nothing through
	// their last offer and are offered nothing more until they call
	// Reoffer (see offer.Sender): a count that only grows points at a
	// sender that declines and never asks again.
	SendersParked    int
	RequestsInFlight int // sent and not yet ended, withdrawn ones included

	Counters
	PanicsHandled uint64 // panics recovered, and runtime.Goexit calls seen, in callbacks, host sends and peers' Limiters
	// RequestIDsReusedEarly counts the request IDs issued to a peer while
	// still quarantined for it, Config.RequestIDs being too small for
	// the traffic (see Config.RequestIDs): a late answer from that peer to
	// the ID's last request could complete the new one. Always 0 without
	// a range.
	RequestIDsReusedEarly uint64
	Stopped               bool
}

// Stats returns a snapshot of the scheduler's state and counters.
func (s *Scheduler) Stats() Stats {
	s.offersMu.Lock()
	defer s.offersMu.Unlock()
	s.requestsMu.Lock()
	defer s.requestsMu.Unlock()
	return Stats{
		Peers:            s.pool.Len(),
		ChannelsOpen:     s.pool.Open(),
		ChannelsClosed:   s.pool.ClosedChannels(),
		SendersWaiting:   s.queue.Len(),
		SendersParked:    s.queue.Parked(),
		RequestsInFlight: s.table.Len(),
		Counters:         s.counts.counters(),
		PanicsHandled:    s.panics.Load(),
		Stopped:          s.stopped,

		RequestIDsReusedEarly: s.table.ReusedEarly(),
	}
}

// PeerUsage appends each connected peer's channel counts and smoothed
// response time to dst, one entry per peer, sorted by peer ID (the entries
// dst already held stay as they were, before them). The counts are read at
// one moment; they are sorted after the scheduler's lock is released.
func (s *Scheduler) PeerUsage(dst []peer.Usage) []peer.Usage {
	base := len(dst)
	s.offersMu.Lock()
	dst = s.pool.Usage(dst)
	s.offersMu.Unlock()
	slices.SortFunc(dst[base:], func(a, b peer.Usage) int { return cmp.Compare(a.ID, b.ID) })
	return dst
}

// Counters say what happened to messages: over the whole scheduler in
// Stats, and by peer in PeerStats. They only grow.
type Counters struct {
	Sent         uint64 // requests the host accepted
	Notified     uint64 // notifications the host accepted
	SendErrors   uint64 // sends the host refused (or panicked on)
	Succeeded    uint64 // requests answered
	TimedOut     uint64
	Refused      uint64 // requests the peer refused (see Refuse)
	Disconnected uint64 // requests failed because their peer disconnected
	Shutdown     uint64 // requests failed by Stop (with receiver.Shutdown)
	// WithdrawnEnded counts requests whose receiver was withdrawn and that
	// have since ended (answered, timed out or failed; their channel has
	// reopened). A request ends once, in one of the counts from Succeeded
	// to here: once none is in flight (after Stop, say), they add up to
	// Sent.
	WithdrawnEnded uint64

	// Responses and refusals dropped, by reason. By peer, a dropped one
	// counts against the peer that sent it.
	Late      uint64
	Unknown   uint64
	WrongPeer uint64
	Duplicate uint64
	WrongType uint64 // of a type other than the request expects (offer.Request.Expect)

	// ResponseTimes holds, for each request counted in Succeeded, the time
	// from its send (when the host's Send was called) to its response
	// (when Deliver accepted it; for a response that came while the
	// host's Send was still running, when the Send returned).
	ResponseTimes Histogram
}

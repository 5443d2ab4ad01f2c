package main

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/peersched/peersched/peer"
)

// peerSaid is what a peer said of us, as a rippled peer would: the
// warnings its accounts of us drew, the connections it cut for our charges
// and the redials it refused while we stayed cut off, the highest balance
// we reached there, the queries it dropped unanswered because its send
// queue was long, and the frames of types we do not decode that it sent us
// (we skip them). Only the last is ours to count: the rest come from an
// in-process peer's own counters, and are zero for external peers.
type peerSaid struct {
	Warnings       int64 `json:"peer_warnings"`
	Drops          int64 `json:"peer_drops"`
	RedialsRefused int64 `json:"peer_redials_refused"`
	BalancePeak    int64 `json:"peer_balance_peak"`
	QueriesDropped int   `json:"queries_dropped_by_peers"`
	UnknownFrames  int   `json:"unknown_frames"`
}

// add adds o's counts to s, and keeps the higher peak.
func (s *peerSaid) add(o peerSaid) {
	s.Warnings += o.Warnings
	s.Drops += o.Drops
	s.RedialsRefused += o.RedialsRefused
	s.BalancePeak = max(s.BalancePeak, o.BalancePeak)
	s.QueriesDropped += o.QueriesDropped
	s.UnknownFrames += o.UnknownFrames
}

// withUnknown adds to byPeer the frames of unknown types each peer sent,
// as counted in events.
func withUnknown(byPeer map[peer.ID]peerSaid, events *peerEvents) map[peer.ID]peerSaid {
	for id, n := range events.unknownFrames() {
		s := byPeer[id]
		s.UnknownFrames = n
		byPeer[id] = s
	}
	return byPeer
}

// Where a report's peer counts come from (result.PeerCounters).
const (
	countersInProcess = "the in-process peers' own counters; unknown_frames is ours"
	countersExternal  = "external peers keep their counters: only unknown_frames (ours) is known"
)

// noteSaid records in r what the peers said of us, in total and by peer.
func (r *result) noteSaid(byPeer map[peer.ID]peerSaid, counted bool, limitsOff bool) {
	r.PeerLimits = "on"
	switch {
	case !counted:
		r.PeerLimits, r.PeerCounters = "theirs", countersExternal
	case limitsOff:
		r.PeerLimits, r.PeerCounters = "off", countersInProcess
	default:
		r.PeerCounters = countersInProcess
	}
	r.PeersSaid = map[string]peerSaid{}
	for id, s := range byPeer {
		r.peerSaid.add(s)
		if s != (peerSaid{}) {
			r.PeersSaid[string(id)] = s
		}
	}
}

// writeSaid prints what the peers said of us, and which said what.
func writeSaid(w io.Writer, r result) {
	s := r.peerSaid
	fmt.Fprintf(w, "  peers said   %s warnings, %s connections cut for our charges (%s redials refused), peak balance %s, %s queries dropped while busy; %s frames of unknown types skipped (peer limits %s; %s)\n",
		commas(int(s.Warnings)), commas(int(s.Drops)), commas(int(s.RedialsRefused)), commas(int(s.BalancePeak)), commas(s.QueriesDropped),
		commas(s.UnknownFrames), r.PeerLimits, r.PeerCounters)
	for _, id := range slices.Sorted(maps.Keys(r.PeersSaid)) {
		p := r.PeersSaid[id]
		fmt.Fprintf(w, "    %-22s warnings %s, cut %s, refused %s, peak balance %s, busy drops %s, unknown frames %s\n", id,
			commas(int(p.Warnings)), commas(int(p.Drops)), commas(int(p.RedialsRefused)), commas(int(p.BalancePeak)), commas(p.QueriesDropped), commas(p.UnknownFrames))
	}
}

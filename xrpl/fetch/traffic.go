package fetch

import (
	"maps"
	"slices"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/penalty"
)

// judgeTrafficLocked judges each peer by the traffic Config.Traffic
// reported (penalty.Tracker.Traffic), at now: a peer whose unwanted bytes
// outgrew its wanted ones is useless, named and handed to Config.Disconnect
// as a peer judged by its answers is. Peers are judged in the order of
// their IDs, so a run replays.
func (s *state) judgeTrafficLocked(totals map[peer.ID]penalty.Traffic, now time.Time) {
	for _, id := range slices.Sorted(maps.Keys(totals)) {
		v := s.verdicts.tracker.Traffic(id, now, totals[id])
		if v.Useless == nil {
			continue
		}
		if !slices.Contains(s.verdicts.penalised, id) {
			s.verdicts.penalised = append(s.verdicts.penalised, id)
		}
		s.verdicts.useless = append(s.verdicts.useless, UselessPeer{
			ID: string(id), Reason: v.Useless.Error(),
			Judged: v.Useless.Judged, Missing: v.Useless.Missing, Corrupt: v.Useless.Corrupt,
			Wanted: v.Useless.Wanted, Unwanted: v.Useless.Unwanted,
		})
		if s.cfg.Disconnect != nil {
			s.verdicts.pending = append(s.verdicts.pending, v.Useless)
		}
	}
}

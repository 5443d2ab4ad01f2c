package fetch

import (
	"errors"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/penalty"
)

// TestUnwantedTrafficCondemns: a peer whose transport reports far more
// unwanted bytes (late, duplicate, unasked) than wanted is judged useless
// at the next look (every ProgressEvery), named with the reason and both
// counts, handed to Config.Disconnect, and the fetch completes from the
// others; a peer within the allowance is kept.
func TestUnwantedTrafficCondemns(t *testing.T) {
	for _, strategy := range []string{"scheduler", "peerset"} {
		t.Run(strategy, func(t *testing.T) {
			traffic := func() map[peer.ID]penalty.Traffic {
				return map[peer.ID]penalty.Traffic{
					"p00": {Wanted: 1000, Unwanted: 6_300_000_000},
					"p01": {Wanted: 1000, Unwanted: penalty.DefaultUnwantedAllowance},
				}
			}
			o := runSim(t, sim{strategy: strategy, ledger: wrongLedger, peers: honest(3), seed: 4, channels: 4, disconnect: true,
				cfg: Config{SetSize: 3, ProgressEvery: 10 * time.Millisecond, Traffic: traffic}})
			mustComplete(t, o, wrongLedger)
			if len(o.rep.Useless) != 1 {
				t.Fatalf("useless %+v, want p00 alone", o.rep.Useless)
			}
			u := o.rep.Useless[0]
			want := "sends unwanted data: 6,300,000,000 bytes late, duplicate or unasked, against 1,000 bytes wanted"
			if u.ID != "p00" || u.Reason != want || u.Unwanted != 6_300_000_000 || u.Wanted != 1000 {
				t.Errorf("useless %+v, want p00 with %q", u, want)
			}
			if len(o.disconnected) != 1 || o.disconnected[0].id != "p00" || !errors.Is(o.disconnected[0].reason, penalty.ErrUseless) ||
				o.disconnected[0].at > 10*time.Millisecond {
				t.Errorf("Disconnect calls %+v, want p00 at the first look, 10ms", o.disconnected)
			}
		})
	}
}

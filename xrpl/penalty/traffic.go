package penalty

import (
	"fmt"
	"time"

	"github.com/peersched/peersched/peer"
)

// DefaultUnwantedAllowance is Config.UnwantedAllowance when it is 0: room
// for the late answers of an honest peer that was slow for a while, a few
// hundred of them at the default batch.
const DefaultUnwantedAllowance = 16 << 20

// Traffic is what a peer has sent its host so far, in bytes on the wire.
type Traffic struct {
	Wanted   int64 // answers the host took
	Unwanted int64 // answers the host refused: late, duplicate, unasked, of the wrong type
}

// Traffic judges peer id, at now, by the running totals of what it has
// sent. Unwanted bytes cost the host as much to read as wanted ones, and
// cost the peer nothing to send; an honest peer's are the answers that came
// after their request had failed, a fraction of what it sends. So a peer
// whose unwanted bytes exceed its wanted bytes by more than
// Config.UnwantedAllowance is useless: the verdict's UselessError says so,
// with both counts. Totals that went down (a new connection's count) are
// taken as they are. A useless peer stays useless.
func (t *Tracker) Traffic(id peer.ID, now time.Time, total Traffic) Verdict {
	r := t.peers[id]
	if r == nil {
		r = &record{}
		t.peers[id] = r
	}
	r.traffic = total
	v := t.verdict(r, now)
	if r.useless || total.Unwanted <= total.Wanted+t.cfg.UnwantedAllowance {
		return v
	}
	r.useless = true
	v.Useless = &UselessError{
		Peer: id, Judged: r.total.Good + r.total.bad(), Missing: r.total.Missing, Corrupt: r.total.Corrupt,
		Wanted: total.Wanted, Unwanted: total.Unwanted,
	}
	return v
}

// commas64 writes n with thousands separators.
func commas64(n int64) string {
	if n < 0 {
		return "-" + commas64(-n)
	}
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

package fetch

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"
)

// Report is what a fetch did. Run, Peerset.Run and Rippled.Run return one whether or not
// the fetch completed. Its JSON form uses the names in the struct tags;
// durations are in seconds.
type Report struct {
	Strategy string `json:"strategy"` // "scheduler", "peerset" or "rippled"
	Root     string `json:"root"`     // the root hash, in hex
	Complete bool   `json:"complete"` // every discovered node arrived and verified

	Objects     int      `json:"objects"`            // nodes that arrived and verified
	Known       int      `json:"known"`              // nodes discovered (Objects of them verified)
	Expected    int      `json:"expected,omitempty"` // Config.Expected, less Resumed: what this fetch had to download
	Bytes       int64    `json:"bytes"`              // their serialized size
	Reused      int      `json:"reused"`             // nodes taken from Config.Base instead of fetched
	ReusedBytes int64    `json:"reused_bytes"`       // their serialized size
	Resumed     int      `json:"resumed"`            // nodes found in Config.Store when the fetch began, not fetched
	Wall        Duration `json:"wall_seconds"`       // from Run's start to its end
	Rate        float64  `json:"objects_per_second"` // Objects / Wall

	Requests     int     `json:"requests"`      // requests the host accepted
	BatchMean    float64 `json:"batch_mean"`    // hashes asked for per request, on average (hedges, copies of requests, left out): Config.Batch, or more where a peer's rate binds (see Config.PeerRate)
	Answered     int     `json:"answered"`      // requests answered (with anything)
	Timeouts     int     `json:"timeouts"`      // requests that got no response in time
	Refused      int     `json:"refused"`       // requests the peer refused, overloaded (the host's Refuse, see Refuser)
	Disconnects  int     `json:"disconnects"`   // requests failed by their peer's disconnection
	BadResponses int     `json:"bad_responses"` // Peerset requests answered with the wrong message type, which fail (Run's are refused by the scheduler, and stay live: see Dropped.WrongType)
	SendErrors   int     `json:"send_errors"`   // sends the host refused
	Retries      int     `json:"retries"`       // objects put back to be asked again: those of failed requests (timeouts, refusals, disconnects, wrong-type answers) and missing or corrupt ones; hedges are not counted
	Hedges       int     `json:"hedges"`        // requests asked again of another peer at the tail, while still out (a request and its hedge end once, together: in Answered or a failure count)
	Missing      int     `json:"missing"`       // objects a peer left out of its answer
	Corrupt      int     `json:"corrupt"`       // objects whose bytes did not match their hash

	Dropped Dropped `json:"dropped"` // responses thrown away before reaching the fetch

	MeanRTT Duration `json:"mean_rtt_seconds"` // mean response time of answered requests
	P50RTT  Duration `json:"p50_rtt_seconds"`  // median response time of answered requests, over every peer
	P99RTT  Duration `json:"p99_rtt_seconds"`  // their 99th percentile

	// The bound, the same for every strategy: by Little's law, Channels
	// requests in flight of Batch objects each (BatchMean, where the fetch
	// sized them itself), each taking MeanRTT, carry
	// at most Channels x Batch / MeanRTT objects a second. Utilisation is
	// Rate over that bound: how well the strategy kept the channels its
	// peers had busy with full requests.
	Channels    float64 `json:"channels_mean"`            // the host's peers' channels (Progress.Channels), the mean over the fetch's snapshots
	Bound       float64 `json:"bound_objects_per_second"` // Channels x Config.Batch (BatchMean with a Config.PeerRate; for Rippled, the larger of RippledConfig.Reply and Blind) / MeanRTT; 0 without an answer
	Utilisation float64 `json:"utilisation"`              // Rate / Bound; 0 without a bound

	Peers []PeerReport `json:"peers"` // by peer ID

	// Useless names the peers the fetch judged useless and stopped asking
	// (handing each to Config.Disconnect), in the order judged, each with
	// its reason.
	Useless []UselessPeer `json:"useless_peers,omitempty"`
	// Lacking names the peers that answered, and lacked every object asked
	// of them (behind, or serving another ledger), by ID. They were benched
	// and asked again, never dropped (Rippled benches nobody: they only go
	// without a follow-up).
	Lacking []LackingPeer `json:"lacking_peers,omitempty"`
}

// Dropped counts responses that no request accepted. For Run they come from
// the scheduler's Stats (the difference over the fetch); the Peerset and
// Rippled count their own.
type Dropped struct {
	WrongType int `json:"wrong_type"` // of another message type than the request declared (Run only: see Report.BadResponses)
	Duplicate int `json:"duplicate"`  // a second response to an answered request
	Late      int `json:"late"`       // after the request had failed (timed out, disconnected)
	WrongPeer int `json:"wrong_peer"` // under the ID of a request sent to another peer
	Unknown   int `json:"unknown"`    // under an ID never issued (or long forgotten)
	Spoofed   int `json:"spoofed"`    // WrongPeer + Unknown
}

// PeerReport is one peer's row in a Report.
type PeerReport struct {
	ID         string   `json:"id"`
	Requests   int      `json:"requests"`    // requests sent to it
	Answered   int      `json:"answered"`    // of which answered
	Failures   int      `json:"failures"`    // timed out, refused, disconnected or wrong type
	BadObjects int      `json:"bad_objects"` // missing or corrupt objects in its answers
	Objects    int      `json:"objects"`     // verified objects it delivered
	Share      float64  `json:"share"`       // Objects / Report.Objects
	P50        Duration `json:"p50_seconds"` // median response time
	P99        Duration `json:"p99_seconds"` // 99th percentile response time
}

// bound fills in the bound and the utilisation (see Report.Channels) from
// the mean channel count and the batch.
func (r *Report) bound(channels, batch float64) {
	r.Channels = channels
	if rtt := time.Duration(r.MeanRTT); rtt > 0 && channels > 0 {
		r.Bound = channels * batch / rtt.Seconds()
		r.Utilisation = r.Rate / r.Bound
	}
}

// Duration is a time.Duration that encodes to JSON as seconds.
type Duration time.Duration

// MarshalJSON encodes d as a number of seconds.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).Seconds())
}

// UnmarshalJSON decodes a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s float64
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*d = Duration(s * float64(time.Second))
	return nil
}

func (d Duration) String() string { return time.Duration(d).String() }

// reportLocked builds a Report from the fetch's state. wall is the fetch's
// duration; dropped is filled in by the strategy.
func (s *state) reportLocked(strategy string, wall time.Duration, dropped Dropped) Report {
	t := s.tally
	r := Report{
		Strategy:     strategy,
		Root:         s.cfg.Root.Hex(),
		Complete:     s.front.complete(),
		Objects:      s.front.verified,
		Known:        s.front.known(),
		Expected:     s.expectedLocked(),
		Bytes:        t.bytes,
		Reused:       t.reused,
		Resumed:      s.resumed,
		ReusedBytes:  t.reusedBytes,
		Wall:         Duration(wall),
		Requests:     t.requests,
		Answered:     t.answered,
		Timeouts:     t.timeouts,
		Refused:      t.refused,
		Disconnects:  t.disconnects,
		BadResponses: t.badResponses,
		SendErrors:   t.sendErrors,
		Retries:      t.retries,
		Hedges:       t.hedges,
		Missing:      t.missing,
		Corrupt:      t.corrupt,
		Dropped:      dropped,
		Useless:      slices.Clone(s.verdicts.useless),
		Lacking:      s.lackingLocked(),
	}
	r.Dropped.Spoofed = r.Dropped.WrongPeer + r.Dropped.Unknown
	if t.batches > 0 {
		r.BatchMean = float64(t.hashes) / float64(t.batches)
	}
	if wall > 0 {
		r.Rate = float64(r.Objects) / wall.Seconds()
	}
	var all []time.Duration
	for id, p := range t.peers {
		sorted := sortedCopy(p.rtts)
		all = append(all, p.rtts...)
		pr := PeerReport{
			ID:         string(id),
			Requests:   p.requests,
			Answered:   p.answered,
			Failures:   p.failures,
			BadObjects: p.badObjects,
			Objects:    p.objects,
			P50:        Duration(percentile(sorted, 50)),
			P99:        Duration(percentile(sorted, 99)),
		}
		if r.Objects > 0 {
			pr.Share = float64(p.objects) / float64(r.Objects)
		}
		r.Peers = append(r.Peers, pr)
	}
	slices.SortFunc(r.Peers, func(a, b PeerReport) int { return cmp.Compare(a.ID, b.ID) })
	r.MeanRTT = Duration(meanOf(all))
	all = sortedCopy(all)
	r.P50RTT, r.P99RTT = Duration(percentile(all, 50)), Duration(percentile(all, 99))
	return r
}

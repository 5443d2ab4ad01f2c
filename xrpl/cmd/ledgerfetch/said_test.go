package main

import (
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// saidReport is the part of a JSON run that says what the peers said of us.
type saidReport struct {
	decoded
	peerSaid
	PeersSaid    map[string]peerSaid `json:"peers_said"`
	PeerLimits   string              `json:"peer_limits"`
	PeerCounters string              `json:"peer_counters"`
}

// TestReportSaysWhatPeersSaid: the JSON report carries, in total and by
// peer, what the in-process peers' counters say of us, under the issue's
// names, and whether their limits were on; the text report prints it.
func TestReportSaysWhatPeersSaid(t *testing.T) {
	for _, transport := range []string{"mem", "tcp"} {
		for _, limits := range []string{"on", "off"} {
			code, stdout, stderr := runCmd(t, args("-transport", transport, "-json", "-peer-limits", limits)...)
			if code != 0 {
				t.Fatalf("%s, limits %s: exit %d\nstderr: %s", transport, limits, code, stderr)
			}
			for _, name := range []string{`"peer_warnings"`, `"peer_drops"`, `"peer_balance_peak"`, `"queries_dropped_by_peers"`, `"unknown_frames"`, `"peers_said"`} {
				if !strings.Contains(stdout, name) {
					t.Errorf("%s, limits %s: JSON lacks %s", transport, limits, name)
				}
			}
			d := decodeOne[saidReport](t, stdout)
			if d.PeerLimits != limits || d.PeerCounters != countersInProcess || d.BalancePeak <= 0 || len(d.PeersSaid) == 0 {
				t.Fatalf("%s, limits %s: report %+v", transport, limits, d)
			}
			var peak int64
			for _, p := range d.PeersSaid {
				peak = max(peak, p.BalancePeak)
			}
			if peak != d.BalancePeak {
				t.Fatalf("%s: peak %d by peer, %d in total", transport, peak, d.BalancePeak)
			}
		}
	}
	code, stdout, stderr := runCmd(t, args()...)
	if code != 0 || !strings.Contains(stdout, "peers said ") || !strings.Contains(stdout, "peak balance") {
		t.Fatalf("text report: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestConnectToChattyPeers: -connect completes against peers that
// interleave status changes, manifests, endpoints and pings with their
// replies, as rippled does; the chatter is counted as unknown frames, and
// the report says the peers' own counters are theirs. (A chatty peer sends a
// frame before each reply, three in four of them of types we skip.)
func TestConnectToChattyPeers(t *testing.T) {
	l := smallLedger(t, 1)
	var addrs []string
	for i := range 2 {
		s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: l, Seed: uint64(i), Chatty: true})
		if err == nil {
			err = s.Listen("127.0.0.1:0")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		addrs = append(addrs, s.Addr())
	}
	code, stdout, stderr := runCmd(t, connectArgs("-connect", strings.Join(addrs, ","), "-json")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	d := decodeOne[saidReport](t, stdout)
	checkComplete(t, d.decoded, l, "tcp (external peers)")
	if d.UnknownFrames < d.Requests/2 || d.PeerLimits != "theirs" || d.PeerCounters != countersExternal || d.Disconnects != 0 {
		t.Fatalf("report: %d unknown frames for %d requests, limits %q, %d disconnects: %+v", d.UnknownFrames, d.Requests, d.PeerLimits, d.Disconnects, d)
	}
}

// TestCutOffForChargesNamed: one simulated peer asked for one object a
// request (-batch 1) gets over 3,200 queries within a second or two, and
// cuts us off for our charges; the report counts the cut and names it as
// the reason the peer disconnected, and the fetch still completes once the
// modelled redial is let back in. The library's rate limits are off
// (-rate-limits off): with them on, the fetch never comes near a cut.
func TestCutOffForChargesNamed(t *testing.T) {
	code, stdout, stderr := runCmd(t, "-objects", "2500", "-peers", "1", "-batch", "1", "-rate-limits", "off", "-transport", "mem", "-latency", "none", "-json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	d := decodeOne[struct {
		saidReport
		Events map[string]peerCounts `json:"peer_events"`
	}](t, stdout)
	if !d.Complete || d.Drops < 1 || d.BalancePeak < 25_000 {
		t.Fatalf("complete %v, %d cuts, peak balance %d: want complete after at least one cut at 25,000", d.Complete, d.Drops, d.BalancePeak)
	}
	if got := d.Events["p00"].Reasons[string(simnet.DownCharges)]; int64(got) != d.Drops {
		t.Fatalf("disconnect reasons %v, want %q %d times", d.Events["p00"].Reasons, simnet.DownCharges, d.Drops)
	}
}

// TestRateLimitsKeepOnePeerPolite is TestCutOffForChargesNamed's setting
// with the library's rate limits on, as by default: one simulated peer, no
// latency, every request sent as fast as the peer's channels allow. The
// peer's rate is declared (fetch.RippledRate), so the fetch never draws a
// warning, let alone a cut, and sizes its requests to make up for it.
func TestRateLimitsKeepOnePeerPolite(t *testing.T) {
	code, stdout, stderr := runCmd(t, "-objects", "2500", "-peers", "1", "-transport", "mem", "-latency", "none", "-json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	d := decodeOne[struct {
		saidReport
		BatchMean float64 `json:"batch_mean"`
	}](t, stdout)
	if !d.Complete || d.Drops != 0 || d.Warnings != 0 || d.BalancePeak >= 5_000 {
		t.Fatalf("complete %v, %d cuts, %d warnings, peak balance %d: want complete, no warning, under 5,000", d.Complete, d.Drops, d.Warnings, d.BalancePeak)
	}
	if d.BatchMean <= 64 {
		t.Fatalf("batch mean %.1f: want requests larger than 64 hashes where the rate binds", d.BatchMean)
	}
}

package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/simnet"
)

func TestParseLatency(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		in   string
		want latencySpec
	}{
		{"varied", latencySpec{kind: "varied"}},
		{"none", latencySpec{kind: "none"}},
		{"fixed:20ms", latencySpec{kind: "fixed", a: 20 * ms}},
		{"uniform:5ms-40ms", latencySpec{kind: "uniform", a: 5 * ms, b: 40 * ms}},
		{"lognormal:20ms,0.5", latencySpec{kind: "lognormal", a: 20 * ms, sigma: 0.5}},
	} {
		got, err := parseLatency(c.in)
		c.want.source = c.in
		if err != nil || got != c.want {
			t.Errorf("%q: %+v, %v", c.in, got, err)
		}
	}
	for _, bad := range []string{"", "fast", "fixed", "fixed:-1ms", "uniform:5ms", "uniform:9ms-1ms", "lognormal:20ms", "lognormal:0s,1", "varied:1"} {
		if _, err := parseLatency(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestDemoPeers: roles are given from the last peer down, p00 stays honest,
// the dropper drops about midway, and varied medians are all different.
func TestDemoPeers(t *testing.T) {
	o, err := parseOptions(nil, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	peers := demoPeers(o, 275_000)
	if len(peers) != 16 {
		t.Fatalf("%d peers", len(peers))
	}
	roles := map[role][]string{}
	latencies := map[string]bool{}
	for _, p := range peers {
		roles[p.role] = append(roles[p.role], string(p.id))
		latencies[p.latency.String()] = true
	}
	if strings.Join(roles[misbehave], ",") != "p15" || strings.Join(roles[slow], ",") != "p14" ||
		strings.Join(roles[dropper], ",") != "p13" || len(roles[honest]) != 13 {
		t.Fatalf("roles %v", roles)
	}
	if len(latencies) != 16 {
		t.Errorf("%d distinct latencies: %v", len(latencies), latencies)
	}
	if d := peers[13].dropAfter; d != 275_000/16/2 {
		t.Errorf("drops after %d objects", d)
	}
	if b := peers[13].behaviour(); b.DropAfterObjects == 0 {
		t.Error("the dropper does not drop")
	}
	if p := peers[0].profile(true, 16); p.RandomOutages == nil || p.Validate() != nil {
		t.Errorf("chaos profile %+v", p)
	}
	o.peers, o.misbehave = 2, 2
	for _, p := range demoPeers(o, 1000) {
		if p.role != misbehave {
			t.Errorf("%s is %s, want every peer misbehaving", p.id, p.role)
		}
	}
}

// TestDemoPeersAsPeersAreAdded: as -peers grows (with -misbehave at its
// default), each peer keeps its latency, p00 is the fastest, the honest
// peers never become fewer and stay more than half, and nobody misbehaves
// below 4 peers. With -chaos no peer has the drops role.
func TestDemoPeersAsPeersAreAdded(t *testing.T) {
	latencyOf := map[peer.ID]string{}
	prevHonest := 0
	for n := 1; n <= 20; n++ {
		o, err := parseOptions([]string{"-peers", strconv.Itoa(n)}, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		peers := demoPeers(o, 10_000)
		roles := map[role]int{}
		for _, p := range peers {
			roles[p.role]++
			if p.role == slow {
				continue // ten times its own latency
			}
			if l, ok := latencyOf[p.id]; ok && l != p.latency.String() {
				t.Errorf("-peers %d: %s has latency %s, had %s with fewer peers", n, p.id, p.latency, l)
			}
			latencyOf[p.id] = p.latency.String()
		}
		if peers[0].role != honest || peers[0].latency.String() != simnet.Uniform(2500*time.Microsecond, 7500*time.Microsecond).String() {
			t.Errorf("-peers %d: p00 is %s with %s, want honest and the fastest", n, peers[0].role, peers[0].latency)
		}
		if roles[honest] < prevHonest || 2*roles[honest] <= n {
			t.Errorf("-peers %d: %d honest (%d with one fewer): %v", n, roles[honest], prevHonest, roles)
		}
		prevHonest = roles[honest]
		if want := min(n/4, 1); roles[misbehave] != want {
			t.Errorf("-peers %d: %d misbehave, want %d", n, roles[misbehave], want)
		}
		o.chaos = true
		for _, p := range demoPeers(o, 10_000) {
			if p.role == dropper || p.behaviour().DropAfterObjects != 0 {
				t.Errorf("-peers %d -chaos: %s drops on its own", n, p.id)
			}
		}
	}
}

func TestCommasAndDur(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 275369: "275,369", -1234567: "-1,234,567"} {
		if got := commas(n); got != want {
			t.Errorf("commas(%d) = %q", n, got)
		}
	}
	for d, want := range map[time.Duration]string{0: "-", 1234567: "1.23ms", 23456789: "23.5ms", 3456 * time.Millisecond: "3.46s"} {
		if got := dur(d); got != want {
			t.Errorf("dur(%v) = %q", d, got)
		}
	}
	for n, want := range map[int64]string{0: "0.0 KB", 3412: "3.4 KB", 999_999: "1000.0 KB", 80_512_345: "80.5 MB"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q", n, got)
		}
	}
}

// TestProgressPrinter: a terminal gets one line rewritten with \r and ended
// at the last report; a pipe gets a line a second; both show the elapsed
// time and the requests in flight of the channels.
func TestProgressPrinter(t *testing.T) {
	reports := func(p *progressPrinter) {
		for i := 1; i <= 8; i++ {
			p.show(fetch.Progress{Elapsed: time.Duration(i) * 250 * time.Millisecond, Verified: 100 * i, Expected: 1000, Rate: 400, InFlight: 3, Channels: 8, Peers: 4})
		}
		p.show(fetch.Progress{Elapsed: 2100 * time.Millisecond, Verified: 1000, Expected: 1000, Done: true, Peers: 4})
	}
	var tty bytes.Buffer
	reports(&progressPrinter{w: &tty, tty: true, peers: 4})
	if got := tty.String(); strings.Count(got, "\r") != 9 || strings.Count(got, "\n") != 1 || !strings.Contains(got, "\r[  2.1s] 1,000/1,000 objects 100.0%") ||
		!strings.Contains(got, "\r[  0.5s] 200/1,000 objects") || !strings.Contains(got, "in flight 3 of 8 channels") {
		t.Errorf("terminal output %q", got)
	}
	var pipe bytes.Buffer
	reports(&progressPrinter{w: &pipe, peers: 4})
	lines := strings.Split(strings.TrimSpace(pipe.String()), "\n")
	if len(lines) != 3 || strings.Contains(pipe.String(), "\r") || !strings.HasPrefix(lines[0], "[  0.2s] 100/1,000 objects") {
		t.Errorf("plain output %q", pipe.String())
	}
}

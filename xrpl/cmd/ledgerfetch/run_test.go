package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// small is a quick fetch: a small ledger, few peers with short latencies
// (TestJSONBothTransports also tries the default, varied ones), bounded
// waits.
var small = []string{"-objects", "3000", "-peers", "5", "-channels", "2", "-batch", "16", "-timeout", "1s", "-stall", "15s", "-latency", "uniform:1ms-4ms"}

func args(extra ...string) []string { return append(append([]string(nil), small...), extra...) }

// connectArgs is small without the flags of in-process peers, which
// -connect refuses.
func connectArgs(extra ...string) []string {
	return append([]string{"-objects", "3000", "-channels", "2", "-batch", "16", "-timeout", "1s", "-stall", "15s"}, extra...)
}

// runCmd runs the command with a bounded context and returns its exit code
// and outputs.
func runCmd(t *testing.T, a ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, a, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// decoded is the part of the JSON report the tests check.
type decoded struct {
	Strategy    string              `json:"strategy"`
	Complete    bool                `json:"complete"`
	Objects     int                 `json:"objects"`
	Expected    int                 `json:"expected"`
	Bytes       int64               `json:"bytes"`
	Rate        float64             `json:"objects_per_second"`
	Requests    int                 `json:"requests"`
	Useless     []fetch.UselessPeer `json:"useless_peers"`
	Lacking     []fetch.LackingPeer `json:"lacking_peers"`
	Disconnects int                 `json:"disconnects"`
	Transport   string              `json:"transport"`
	PeerCount   int                 `json:"peer_count"`
	Utilised    float64             `json:"utilisation"`
	Bound       float64             `json:"bound_objects_per_second"`
	Channels    float64             `json:"channels_mean"`
	Error       string              `json:"error"`
	Dropped     struct {
		Spoofed int `json:"spoofed"`
	} `json:"dropped"`
	Peers []struct {
		ID      string  `json:"id"`
		Objects int     `json:"objects"`
		Share   float64 `json:"share"`
		P50     float64 `json:"p50_seconds"`
	} `json:"peers"`
	Roles map[string]string `json:"roles"`
}

// runs is the JSON report's shape, whatever the strategies.
type runs[T any] struct {
	Runs       []T `json:"runs"`
	Comparison *struct {
		Strategies []string  `json:"strategies"`
		Wall       []float64 `json:"wall_seconds"`
		Rate       []float64 `json:"objects_per_second"`
		Speedup    float64   `json:"speedup"`
		Speedups   []float64 `json:"speedups"`
	} `json:"comparison"`
}

// decodeOne decodes a JSON report of one run.
func decodeOne[T any](t *testing.T, stdout string) T {
	t.Helper()
	var r runs[T]
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Runs) != 1 || r.Comparison != nil {
		t.Fatalf("stdout is not a JSON report of one run (%v):\n%s", err, stdout)
	}
	return r.Runs[0]
}

func smallLedger(t *testing.T, seed uint64) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Generate(seed, 3000)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkComplete(t *testing.T, d decoded, l *ledger.Ledger, transport string) {
	t.Helper()
	if !d.Complete || d.Objects != l.Len() || d.Expected != l.Len() || d.Bytes != l.Size() || d.Error != "" {
		t.Fatalf("report %+v, ledger has %d nodes", d, l.Len())
	}
	if d.Transport != transport || d.Rate <= 0 || d.Requests == 0 || d.Utilised <= 0 {
		t.Fatalf("report %+v", d)
	}
	total := 0
	for _, p := range d.Peers {
		total += p.Objects
	}
	if total != d.Objects {
		t.Fatalf("peers delivered %d objects, report says %d", total, d.Objects)
	}
}

// TestJSONBothTransports: the command fetches the whole ledger over each
// transport and prints a JSON report on stdout, progress on stderr.
func TestJSONBothTransports(t *testing.T) {
	l := smallLedger(t, 1)
	for _, transport := range []string{"mem", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, args("-transport", transport, "-json", "-latency", "varied")...)
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr)
			}
			d := decodeOne[decoded](t, stdout)
			checkComplete(t, d, l, transport)
			if d.Strategy != "scheduler" || d.PeerCount != 5 || len(d.Roles) != 5 || d.Roles["p04"] != "misbehave" {
				t.Fatalf("report %+v", d)
			}
			if !strings.Contains(stderr, "objects") {
				t.Errorf("no progress on stderr: %q", stderr)
			}
		})
	}
}

// TestBothStrategiesText: -strategy both runs the scheduler and the peerset
// on the same ledger and prints two reports and a comparison; progress lines
// are plain when stdout is not a terminal.
func TestBothStrategiesText(t *testing.T) {
	code, stdout, stderr := runCmd(t, args("-strategy", "both", "-transport", "mem")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s\nstdout: %s", code, stderr, stdout)
	}
	for _, want := range []string{"scheduler: ", "peerset: ", "strategy scheduler", "strategy peerset", "comparison", "p50", "utilisation",
		" refused by busy peers, "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "\r") || strings.Count(stdout, "fetched 4,") != 2 {
		t.Errorf("output:\n%s", stdout)
	}
}

// TestBothStrategiesJSON: -strategy both -json prints the shape one
// strategy does, an object with both runs, and the comparison.
func TestBothStrategiesJSON(t *testing.T) {
	code, stdout, stderr := runCmd(t, args("-strategy", "both", "-transport", "mem", "-json")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var r runs[decoded]
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(r.Runs) != 2 || r.Runs[0].Strategy != "scheduler" || r.Runs[1].Strategy != "peerset" {
		t.Fatalf("runs %+v", r.Runs)
	}
	for _, d := range r.Runs {
		checkComplete(t, d, smallLedger(t, 1), "mem")
		if d.Channels <= 0 || d.Bound <= 0 {
			t.Errorf("%s: no bound: %+v", d.Strategy, d)
		}
	}
	c := r.Comparison
	if c == nil || strings.Join(c.Strategies, ",") != "scheduler,peerset" || len(c.Wall) != 2 || c.Rate[0] != r.Runs[0].Rate ||
		c.Rate[1] != r.Runs[1].Rate || c.Speedup != r.Runs[0].Rate/r.Runs[1].Rate {
		t.Fatalf("comparison %+v of runs %+v", c, r.Runs)
	}
}

// TestAllStrategies: -strategy all runs the scheduler, the peer set and
// rippled's own strategy on the same ledger and peers, each to completion,
// and compares them: a table in the text, every rate and each one's speedup
// against the first in the JSON.
func TestAllStrategies(t *testing.T) {
	code, stdout, stderr := runCmd(t, args("-strategy", "all", "-transport", "mem", "-json")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var r runs[decoded]
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	var names []string
	for _, d := range r.Runs {
		names = append(names, d.Strategy)
		checkComplete(t, d, smallLedger(t, 1), "mem")
	}
	if strings.Join(names, ",") != "scheduler,peerset,rippled" {
		t.Fatalf("runs %v", names)
	}
	c := r.Comparison
	if c == nil || strings.Join(c.Strategies, ",") != "scheduler,peerset,rippled" || len(c.Rate) != 3 || len(c.Speedups) != 3 ||
		c.Speedups[0] != 1 || c.Speedups[2] != r.Runs[0].Rate/r.Runs[2].Rate || c.Speedup != c.Speedups[1] {
		t.Fatalf("comparison %+v of runs %+v", c, r.Runs)
	}

	var out bytes.Buffer
	results := []result{}
	for _, d := range r.Runs {
		results = append(results, result{Report: fetch.Report{Strategy: d.Strategy, Complete: true, Wall: fetch.Duration(time.Second), Rate: d.Rate}})
	}
	results[2].Complete = false
	writeComparison(&out, results)
	for _, want := range []string{"comparison, same ledger and peers:", "scheduler is", "peerset ", "x as fast", "rippled ", "(incomplete)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("comparison lacks %q:\n%s", want, out.String())
		}
	}
}

// chaosRun is the part of a -chaos report that TestChaosReport checks.
type chaosRun struct {
	decoded
	Chaos       bool                  `json:"chaos"`
	Events      map[string]peerCounts `json:"peer_events"`
	PeerDetails []struct {
		ID       string `json:"id"`
		Failures int    `json:"failures"`
	} `json:"peers"`
}

// TestChaosReport: peers killed and restarted during the fetch do not stop
// it, and the report says what -chaos did: each peer's kills and restarts,
// each kill seen by the host as one disconnection, no other disconnection,
// and requests failed only on peers that were killed (no peer misbehaves
// here, loses anything, or drops on its own). The ledger is big enough, and the
// latency long enough, that kills fall within the fetch.
func TestChaosReport(t *testing.T) {
	for _, transport := range []string{"mem", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, args("-transport", transport, "-chaos", "-json", "-objects", "20000", "-latency", "fixed:10ms", "-misbehave", "0")...)
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr)
			}
			d := decodeOne[chaosRun](t, stdout)
			kills := 0
			for id, c := range d.Events {
				kills += c.Kills
				if c.Disconnections != c.Kills || c.Restarts+c.FailedRestarts > c.Kills || c.Restarts+c.FailedRestarts < c.Kills-1 {
					t.Errorf("%s: %+v: every kill one disconnection, and a restart for each but perhaps the last", id, c)
				}
			}
			if !d.Chaos || kills == 0 {
				t.Fatalf("chaos %v, %d kills: %+v", d.Chaos, kills, d.Events)
			}
			// A peer never killed may still have failures: on the real
			// clock, a loaded machine (the race detector, CI) can make a
			// request outlive its timeout. What chaos must not cause is a
			// disconnection it did not inject, checked peer by peer above.
			for _, p := range d.PeerDetails {
				if c := d.Events[p.ID]; c.Kills == 0 && c.Disconnections > 0 {
					t.Errorf("%s: disconnected %d times, never killed", p.ID, c.Disconnections)
				}
			}
			for id, ro := range d.Roles {
				if ro != "honest" && ro != "slow" {
					t.Errorf("%s is %s under chaos", id, ro)
				}
			}
			t.Logf("%d kills, %d requests failed by disconnection: %+v", kills, d.Disconnects, d.Events)
		})
	}
}

// TestReportPrintsChaos: the text report says, under -chaos, what was
// injected, what the host saw, and what it cost, peer by peer; without
// -chaos, only the disconnections.
func TestReportPrintsChaos(t *testing.T) {
	events := map[string]peerCounts{"p03": {Kills: 2, Restarts: 1, FailedRestarts: 1, Disconnections: 2}, "p01": {Kills: 1, Restarts: 1, Disconnections: 1}}
	var out strings.Builder
	writeReport(&out, result{Report: fetch.Report{Strategy: "scheduler", Disconnects: 7}, Chaos: true, Events: events})
	for _, want := range []string{
		"  chaos        3 kills and 2 restarts injected (1 failed); the host saw 3 disconnections, which failed 7 requests\n" +
			"    p01                    killed 1, restarted 1, failed to restart 0, disconnected 1\n" +
			"    p03                    killed 2, restarted 1, failed to restart 1, disconnected 2\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks\n%s\nin\n%s", want, out.String())
		}
	}
	out.Reset()
	writeReport(&out, result{Report: fetch.Report{Strategy: "scheduler", Disconnects: 4}, Events: map[string]peerCounts{"p13": {Disconnections: 1}}})
	if want := "  disconnects  the host saw 1 disconnections, which failed 4 requests\n    p13                    disconnected 1\n"; !strings.Contains(out.String(), want) ||
		strings.Contains(out.String(), "chaos") {
		t.Errorf("report lacks\n%s\nin\n%s", want, out.String())
	}
}

// serve starts n servers of the ledger (seed, 3000) on loopback, as
// ledgerpeers would, and returns their addresses.
func serve(t *testing.T, n int, seed uint64) string {
	t.Helper()
	return serveLedger(t, n, smallLedger(t, seed))
}

// serveLedger starts n TCP servers of l on loopback and returns their
// addresses, joined for -connect.
func serveLedger(t *testing.T, n int, l *ledger.Ledger) string {
	t.Helper()
	var addrs []string
	for i := range n {
		s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: l, Seed: uint64(i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		addrs = append(addrs, s.Addr())
	}
	return strings.Join(addrs, ",")
}

// TestConnect: -connect fetches from running peers.
func TestConnect(t *testing.T) {
	addrs := serve(t, 3, 1)
	code, stdout, stderr := runCmd(t, connectArgs("-connect", addrs, "-json")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	d := decodeOne[decoded](t, stdout)
	checkComplete(t, d, smallLedger(t, 1), "tcp (external peers)")
	if d.PeerCount != 3 || len(d.Peers) == 0 || !strings.Contains(addrs, d.Peers[0].ID) {
		t.Fatalf("report %+v", d)
	}
}

// TestFailsWhenPeersServeAnotherLedger: peers that have none of the objects
// (a -seed that does not match theirs) are benched after each answer and
// asked again when the bench ends: they may only be behind, and the wire
// cannot tell. They stay connected, and are named as lacking every object;
// the fetch stalls, and the command exits 1 and says what is missing and
// why, in text and in JSON, and which root it wanted.
func TestFailsWhenPeersServeAnotherLedger(t *testing.T) {
	addrs := serve(t, 2, 2)
	code, stdout, stderr := runCmd(t, connectArgs("-connect", addrs, "-stall", "1s")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	l := smallLedger(t, 1)
	for _, want := range []string{
		"fetch incomplete", fmt.Sprintf("%d of %d objects missing", l.Len(), l.Len()),
		"no object verified for", "2 peers connected", "objects missing from answers", "benched, with none of the ledger: ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}
	named := regexp.MustCompile(`(?m)^  benched      (\S+): lacked all [0-9]+ objects asked: behind, or serves another ledger$`)
	if !strings.Contains(stdout, "INCOMPLETE") || len(named.FindAllString(stdout, -1)) != 2 ||
		!strings.Contains(stdout, "  root         "+l.Root().Hex()) {
		t.Errorf("report does not say INCOMPLETE, name both peers and the root %s:\n%s", l.Root().Hex(), stdout)
	}
	for _, a := range strings.Split(addrs, ",") {
		if !strings.Contains(stderr, a+" (lacked all ") {
			t.Errorf("error does not name %s: %s", a, stderr)
		}
	}

	code, stdout, _ = runCmd(t, connectArgs("-connect", addrs, "-stall", "1s", "-json")...)
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	d := decodeOne[decoded](t, stdout)
	if d.Complete || d.Objects != 0 || !strings.Contains(d.Error, "fetch incomplete") || len(d.Useless) != 0 || len(d.Lacking) != 2 {
		t.Fatalf("report %+v", d)
	}
	// No storm: a request per back-off, where they once got thousands a
	// second until the stall. Within the stall of 1s, the benches (each at
	// least half its back-off: 25ms, 50ms, ... 400ms) leave room for six
	// requests per peer.
	if limit := 2 * 6; d.Requests > limit {
		t.Fatalf("%d requests to peers with nothing, want at most %d", d.Requests, limit)
	}
}

// TestFailsWhenNoPeerAnswers: with nobody listening the command gives up
// after -wait and says so.
func TestFailsWhenNoPeerAnswers(t *testing.T) {
	code, _, stderr := runCmd(t, connectArgs("-connect", "127.0.0.1:1", "-wait", "300ms")...)
	if code != 1 || !strings.Contains(stderr, "could not connect to any peer within 300ms (-wait)") ||
		!strings.Contains(stderr, "127.0.0.1:1: dial tcp 127.0.0.1:1: connect: connection refused") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// TestUsageErrors: a bad command line exits 2 with a message.
func TestUsageErrors(t *testing.T) {
	for _, a := range [][]string{
		{"-transport", "udp"}, {"-strategy", "fastest"}, {"-latency", "uniform:9ms-1ms"}, {"-peers", "0"},
		{"-misbehave", "9", "-peers", "3"}, {"-batch", "5000"}, {"-loss", "1.5"}, {"stray"}, {"-connect", "x:1", "-transport", "mem"},
		{"-base", "x.json"}, {"-ledger", "no-such-ledger.json"}, {"-channels", "-1"},
		{"-peer-limits", "maybe"}, {"-connect", "x:1", "-peer-limits", "off"},
	} {
		code, stdout, stderr := runCmd(t, a...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "ledgerfetch:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", a, code, stdout, stderr)
		}
	}
	// The -channels bound: the scheduler's cap on requests in flight,
	// shared among the peers; named with the flag, at once (a million
	// channels per peer once hung the fetch).
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-channels", "1000000"}, "-channels 1000000: want at most 262,144 with 16 peers"},
		{[]string{"-channels", "1398102", "-peers", "3"}, "-channels 1398102: want at most 1,398,101 with 3 peers"},
		{[]string{"-channels", "262145", "-peers", "16", "-misbehave", "0"}, "-channels 262145: want at most 262,144 with 16 peers"},
	} {
		code, _, stderr := runCmd(t, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "4,194,304") {
			t.Errorf("%q: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := runCmd(t, "-h"); code != 0 || !strings.Contains(stderr, "-strategy") {
		t.Errorf("-h: exit %d, %q", code, stderr)
	}
}

// hostilePeer listens on loopback and, on every connection it accepts,
// sends a frame header announcing a payload over the 4 MB cap, and waits
// for the fetcher to hang up. It returns its address and a count of the
// connections it accepted.
func hostilePeer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var accepted atomic.Int64
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer nc.Close()
				_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
				_, _ = nc.Write(binary.BigEndian.AppendUint32(nil, 1<<25))
				_, _ = io.Copy(io.Discard, nc)
			}()
		}
	}()
	return ln.Addr().String(), &accepted
}

// TestHostilePeerBackedOffAndNamed: a peer that sends a frame over the cap
// on every connection is redialled after waits that double (not every
// 50ms, as before), and the report names why its connections ended; the
// fetch completes from the honest peers.
func TestHostilePeerBackedOffAndNamed(t *testing.T) {
	// Honest peers slow enough that the fetch lasts about a second.
	var addrs []string
	for i := range 2 {
		s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: smallLedger(t, 1), Seed: uint64(i), Behaviour: tcpnet.Behaviour{Latency: simnet.Fixed(10 * time.Millisecond)}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Listen("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		addrs = append(addrs, s.Addr())
	}
	bad, accepted := hostilePeer(t)
	code, stdout, stderr := runCmd(t, connectArgs("-connect", strings.Join(append(addrs, bad), ","), "-channels", "1", "-json")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var r runs[struct {
		decoded
		Wall   float64                   `json:"wall_seconds"`
		Events map[string]map[string]any `json:"peer_events"`
	}]
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || len(r.Runs) != 1 {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	d := r.Runs[0]
	checkComplete(t, d.decoded, smallLedger(t, 1), "tcp (external peers)")
	ev, ok := d.Events[bad]
	if !ok {
		t.Fatalf("no events for the hostile peer %s: %+v", bad, d.Events)
	}
	reasons, _ := ev["disconnect_reasons"].(map[string]any)
	n, _ := reasons["frame over the cap"].(float64)
	if n < 1 || len(reasons) != 1 {
		t.Fatalf("hostile peer's disconnect reasons %v, want only \"frame over the cap\"", reasons)
	}
	// Its connections in the fetch's wall time: the back-off doubles from
	// 50ms, so a handful (1 + log2 of wall/25ms at most), where a redial
	// every 50ms would be wall/50ms.
	limit := 2 + int(math.Log2(max(d.Wall, 0.05)/0.025))
	if got := int(accepted.Load()); got > limit+2 { // +2: the wait for peers and the report's settling
		t.Errorf("hostile peer dialled %d times in %.2fs, want at most about %d", got, d.Wall, limit)
	}
	t.Logf("hostile peer: %d connections in a %.2fs fetch, reasons %v", accepted.Load(), d.Wall, reasons)
}

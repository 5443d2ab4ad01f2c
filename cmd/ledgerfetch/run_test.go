package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/tcpnet"
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
	Strategy    string  `json:"strategy"`
	Complete    bool    `json:"complete"`
	Objects     int     `json:"objects"`
	Expected    int     `json:"expected"`
	Bytes       int64   `json:"bytes"`
	Rate        float64 `json:"objects_per_second"`
	Requests    int     `json:"requests"`
	Disconnects int     `json:"disconnects"`
	Transport   string  `json:"transport"`
	PeerCount   int     `json:"peer_count"`
	Utilised    float64 `json:"utilisation"`
	Bound       float64 `json:"bound_objects_per_second"`
	Channels    float64 `json:"channels_mean"`
	Error       string  `json:"error"`
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

// TestChaos: peers killed and restarted during the fetch do not stop it.
// (Whether a kill falls within so short a fetch is up to the clock; the
// kills themselves are tested in tcpnet and fetch.)
func TestChaos(t *testing.T) {
	for _, transport := range []string{"mem", "tcp"} {
		t.Run(transport, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, args("-transport", transport, "-chaos", "-json", "-latency", "varied")...)
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr)
			}
			d := decodeOne[decoded](t, stdout)
			checkComplete(t, d, smallLedger(t, 1), transport)
			t.Logf("%d requests failed by disconnection", d.Disconnects)
		})
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
// (a -seed that does not match theirs) make the fetch stall; the command
// exits 1 and says what is missing and why, in text and in JSON.
func TestFailsWhenPeersServeAnotherLedger(t *testing.T) {
	addrs := serve(t, 2, 2)
	code, stdout, stderr := runCmd(t, connectArgs("-connect", addrs, "-stall", "1s")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	l := smallLedger(t, 1)
	for _, want := range []string{
		"fetch incomplete", fmt.Sprintf("%d of %d objects missing", l.Len(), l.Len()),
		"no object verified for", "2 peers connected", "objects missing from answers",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q: %s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "INCOMPLETE") {
		t.Errorf("report does not say INCOMPLETE:\n%s", stdout)
	}

	code, stdout, _ = runCmd(t, connectArgs("-connect", addrs, "-stall", "1s", "-json")...)
	if code != 1 {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	d := decodeOne[decoded](t, stdout)
	if d.Complete || d.Objects != 0 || !strings.Contains(d.Error, "fetch incomplete") {
		t.Fatalf("report %+v", d)
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
	} {
		code, stdout, stderr := runCmd(t, a...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "ledgerfetch:") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", a, code, stdout, stderr)
		}
	}
	if code, _, stderr := runCmd(t, "-h"); code != 0 || !strings.Contains(stderr, "-strategy") {
		t.Errorf("-h: exit %d, %q", code, stderr)
	}
}

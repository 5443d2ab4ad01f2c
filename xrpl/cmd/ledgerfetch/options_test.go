package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/internal/fdlimit"
)

// TestFlagErrors: every bad flag value is a usage error whose message names
// the flag and says what is wrong with it.
func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string // in the message
	}{
		{[]string{"-connect", ","}, []string{`-connect ",": no address`, "HOST:PORT"}},
		{[]string{"-connect", " , "}, []string{"-connect", "no address"}},
		{[]string{"-connect", "127.0.0.1"}, []string{"-connect: 1 of 1 addresses unusable", "127.0.0.1: want HOST:PORT (missing port in address)"}},
		{[]string{"-connect", ":99999"}, []string{":99999: port 99999 is out of range: want 1 to 65535"}},
		{[]string{"-connect", "127.0.0.1:0"}, []string{"127.0.0.1:0: port 0 is out of range"}},
		{[]string{"-connect", "foo:bar"}, []string{`foo:bar: port "bar" is not a number`}},
		{[]string{"-connect", ":7001"}, []string{":7001: no host before the port"}},
		{[]string{"-connect", "127.0.0.1:"}, []string{"127.0.0.1:: no port after the colon"}},
		{[]string{"-connect", "127.0.0.1,:99999,foo:bar,127.0.0.1:7001"}, []string{"3 of 4 addresses unusable",
			"127.0.0.1: want HOST:PORT", ":99999: port 99999", `foo:bar: port "bar"`}},
		{[]string{"-connect", "127.0.0.1:7001", "-chaos"}, []string{"-chaos has no effect with -connect"}},
		{[]string{"-connect", "127.0.0.1:7001", "-peers", "3"}, []string{"-peers has no effect with -connect"}},
		{[]string{"-connect", "127.0.0.1:7001", "-latency", "none"}, []string{"-latency has no effect with -connect"}},
		{[]string{"-connect", "127.0.0.1:7001", "-misbehave", "0"}, []string{"-misbehave has no effect with -connect"}},
		{[]string{"-connect", "127.0.0.1:7001", "-loss", "0.1"}, []string{"-loss has no effect with -connect"}},
		{[]string{"-connect", "127.0.0.1:7001", "-transport", "mem"}, []string{"-transport mem has no effect with -connect", "tcp"}},
		{[]string{"-timeout", "0"}, []string{"-timeout 0s: want at least 1ms", "granularity"}},
		{[]string{"-timeout", "999us"}, []string{"-timeout 999µs: want at least 1ms"}},
		{[]string{"-timeout", "-1s"}, []string{"-timeout -1s: want at least 1ms"}},
		{[]string{"-stall", "1ns"}, []string{"-stall 1ns: want at least 250ms", "how often the fetch checks for a stall"}},
		{[]string{"-stall", "0"}, []string{"-stall 0s: want at least 250ms"}},
		{[]string{"-wait", "0"}, []string{"-wait 0s: want a positive time"}},
		{[]string{"-wait", "-1s"}, []string{"-wait -1s: want a positive time"}},
		{[]string{"-answer-timeout", "0s"}, []string{"-answer-timeout 0s: want a positive time"}},
		{[]string{"-peers", "0"}, []string{"-peers 0: want at least 1"}},
		{[]string{"-peers", "100000000"}, []string{"-peers 100000000:", "open files", "RLIMIT_NOFILE", "ulimit -n", "-transport mem"}},
		{[]string{"-misbehave", "9", "-peers", "3"}, []string{"-misbehave 9: want 0 to the number of peers (-peers 3)"}},
		{[]string{"-misbehave", "-1"}, []string{"-misbehave -1: want 0 to the number of peers"}},
		{[]string{"-loss", "1.5"}, []string{"-loss 1.5: want a probability, from 0 to 1"}},
		{[]string{"-loss", "NaN"}, []string{"-loss NaN: want a probability"}},
		{[]string{"-batch", "5000"}, []string{"-batch 5000: want 0 (the fetch chooses) or 1 to 4096"}},
		{[]string{"-batch", "-1"}, []string{"-batch -1: want 0 (the fetch chooses) or 1 to 4096"}},
		{[]string{"-channels", "-1"}, []string{"-channels -1: want 0 (adaptive) or a fixed count"}},
		{[]string{"-objects", "0"}, []string{"-objects 0: want at least 1"}},
		{[]string{"-strategy", "fastest"}, []string{`-strategy "fastest": want scheduler, peerset, rippled, both or all`}},
		{[]string{"-transport", "udp"}, []string{`-transport "udp": want tcp or mem`}},
		{[]string{"-latency", "uniform:9ms-1ms"}, []string{`-latency "uniform:9ms-1ms"`, "out of order"}},
		{[]string{"-base", "x.json"}, []string{`-base "x.json" needs -ledger`}},
		{[]string{"stray"}, []string{`unexpected arguments ["stray"]`}},
		{[]string{"-peers", "x"}, []string{`invalid value "x" for flag -peers`}},
	} {
		_, err := parseOptions(c.args, &bytes.Buffer{})
		if !errors.Is(err, errUsage) {
			t.Errorf("%q: %v, want a usage error", c.args, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: message %q lacks %q", c.args, err, w)
			}
		}
	}
}

// TestFlagsAcceptedWithConnect: the flags that name the ledger, or shape
// the fetch itself, stay valid with -connect, and -peers follows its
// addresses.
func TestFlagsAcceptedWithConnect(t *testing.T) {
	o, err := parseOptions([]string{"-connect", "127.0.0.1:7001, localhost:7002", "-objects", "10", "-seed", "3", "-channels", "2",
		"-batch", "8", "-strategy", "both", "-transport", "tcp", "-timeout", "1ms", "-stall", "250ms", "-wait", "1s"}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.peers != 2 || o.misbehave != 0 || strings.Join(o.connect, ",") != "127.0.0.1:7001,localhost:7002" {
		t.Errorf("options %+v", o)
	}
}

// TestMisbehavingByDefault: unless -misbehave is given, no peer misbehaves
// below 4 peers and one does from 4 on; given, it is taken as it is, and
// the help says so.
func TestMisbehavingByDefault(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{[]string{"-peers", "1"}, 0},
		{[]string{"-peers", "2"}, 0},
		{[]string{"-peers", "3"}, 0},
		{[]string{"-peers", "4"}, 1},
		{nil, 1}, // 16 peers
		{[]string{"-peers", "1", "-misbehave", "1"}, 1},
		{[]string{"-peers", "8", "-misbehave", "0"}, 0},
		{[]string{"-peers", "8", "-misbehave", "3"}, 3},
	} {
		o, err := parseOptions(c.args, &bytes.Buffer{})
		if err != nil || o.misbehave != c.want {
			t.Errorf("%q: %d misbehaving, %v; want %d", c.args, o.misbehave, err, c.want)
		}
	}
	var help bytes.Buffer
	if _, err := parseOptions([]string{"-h"}, &help); err == nil || !strings.Contains(help.String(), "1 with 4 peers or more, none with fewer") {
		t.Errorf("help does not say the default of -misbehave:\n%s", help.String())
	}
}

// TestCheckOpenFiles: too many peers for the open-file limit fail at once,
// naming the limit, what they need, and how to raise it; within it they
// pass, and simulated peers need no files.
func TestCheckOpenFiles(t *testing.T) {
	limit := fdlimit.Limit{Cur: 1024, Max: 4096, Known: true}
	for _, c := range []struct {
		peers, perPeer int
		limit          fdlimit.Limit
		want           []string // nil: no error
	}{
		{100, 3, limit, nil},
		{320, 3, limit, nil}, // 960 + 64 = 1024
		{321, 3, limit, []string{"-peers 321: they need about 1,027 open files (3 each, and 64 for the rest)", "limit of 1,024 (RLIMIT_NOFILE)",
			"raise it with ulimit -n 1,027 before running", "-transport mem"}},
		{2000, 3, limit, []string{"6,064 open files", "up to its hard limit, 4,096", "limits.conf"}},
		{2000, 1, limit, []string{"2,064 open files (1 each", "ulimit -n 2,064"}},
		{1_000_000, 0, limit, nil},
		{1_000_000, 3, fdlimit.Limit{}, nil}, // unknown
	} {
		err := checkOpenFiles(c.peers, c.perPeer, c.limit)
		if (err == nil) != (c.want == nil) {
			t.Errorf("%d peers x %d: %v", c.peers, c.perPeer, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d peers x %d: message %q lacks %q", c.peers, c.perPeer, err, w)
			}
		}
		if c.perPeer == 1 && strings.Contains(err.Error(), "-transport mem") {
			t.Errorf("suggests simulated peers for -connect: %v", err)
		}
	}
}

// TestResolveAll: -connect's host names are resolved before any dial; each
// that does not resolve is named with the resolver's reason, and IP
// addresses are not looked up.
func TestResolveAll(t *testing.T) {
	var looked []string
	lookup := func(_ context.Context, host string) ([]string, error) {
		looked = append(looked, host)
		if host == "peer.example" {
			return []string{"192.0.2.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	err := resolveAll(context.Background(), []string{"127.0.0.1:7001", "peer.example:7002", "nowhere.invalid:7003", "[::1]:7004", "gone.invalid:1"}, lookup)
	for _, w := range []string{"-connect: 2 of 5 addresses unusable", `nowhere.invalid:7003: host "nowhere.invalid" does not resolve (no such host)`,
		`gone.invalid:1: host "gone.invalid"`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	if strings.Join(looked, ",") != "peer.example,nowhere.invalid,gone.invalid" {
		t.Errorf("looked up %q", looked)
	}
	if err := resolveAll(context.Background(), []string{"peer.example:1"}, lookup); err != nil {
		t.Error(err)
	}
}

// TestUnresolvableConnectIsUsageError: run stops before dialling when a
// -connect host does not resolve, and says which.
func TestUnresolvableConnectIsUsageError(t *testing.T) {
	code, stdout, stderr := runCmd(t, "-connect", "127.0.0.1:1,host.invalid:1", "-wait", "1ms")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `host.invalid:1: host "host.invalid" does not resolve`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

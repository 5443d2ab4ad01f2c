package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/node"
)

// TestComponentFlagErrors: each bad value of the components' flags is a
// usage error that names the flag and says what is wrong.
func TestComponentFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-lookups", "-1"}, "-lookups -1: want 0 to 1000 a second"},
		{[]string{"-lookups", "NaN"}, "-lookups NaN: want 0 to 1000"},
		{[]string{"-relay", "1001"}, "-relay 1001: want 0 to 1000 a second"},
		{[]string{"-budget", "-5"}, "-budget -5: want 0 (no cap) or a positive count"},
		{[]string{"-bandwidth", "-5"}, "-bandwidth -5: want 0 (no cap)"},
		{[]string{"-bandwidth", "1000"}, "-bandwidth 1000: want at least"},
		{[]string{"-budget", "100", "-strategy", "peerset"}, "-strategy peerset has none to cap"},
		{[]string{"-bandwidth", "100000", "-strategy", "all"}, "-strategy peerset has none to cap"},
	} {
		code, _, stderr := runCmd(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}

// componentsRun is the part of a JSON run that TestComponentsJSON checks.
type componentsRun struct {
	Strategy   string                 `json:"strategy"`
	Complete   bool                   `json:"complete"`
	Components []node.ComponentReport `json:"components"`
}

// TestComponentsJSON: with -lookups and -relay, each strategy's report has
// a components section, the fetch first, each row with its priority, its
// requests and what was done; on the scheduler they share it (way
// "scheduler"), the peer set's run builds them the old way. The fetch
// still completes, under a -budget and a -bandwidth too.
func TestComponentsJSON(t *testing.T) {
	code, stdout, stderr := runCmd(t, args("-strategy", "both", "-transport", "mem", "-json", "-lookups", "50", "-relay", "20", "-latency", "fixed:20ms")...)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	var r runs[componentsRun]
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	want := map[string]string{"scheduler": node.WayScheduler, "peerset": node.WayOwnPeers}
	for _, run := range r.Runs {
		if !run.Complete || len(run.Components) != 3 {
			t.Fatalf("%s: complete %v, components %+v", run.Strategy, run.Complete, run.Components)
		}
		for i, name := range []string{"fetch", "lookups", "relay"} {
			c := run.Components[i]
			if c.Name != name || c.Way != want[run.Strategy] || c.Requests == 0 || c.Done == 0 || c.Throughput <= 0 {
				t.Errorf("%s: row %d: %+v", run.Strategy, i, c)
			}
		}
		if p := run.Components; p[1].Priority <= p[2].Priority || p[2].Priority <= p[0].Priority {
			t.Errorf("%s: priorities fetch %d, lookups %d, relay %d: want lookups above relay above the fetch", run.Strategy, p[0].Priority, p[1].Priority, p[2].Priority)
		}
	}

	code, stdout, stderr = runCmd(t, args("-transport", "mem", "-lookups", "20", "-budget", "300", "-bandwidth", "100000")...)
	if code != 0 || !strings.Contains(stdout, "lookups   shared") {
		t.Fatalf("with a budget: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// TestNoComponents: -lookups 0 runs the fetch alone, and the report has no
// components section.
func TestNoComponents(t *testing.T) {
	code, stdout, stderr := runCmd(t, args("-transport", "mem", "-lookups", "0", "-json")...)
	if code != 0 || strings.Contains(stdout, `"components"`) {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

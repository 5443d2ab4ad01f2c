package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagErrorsNameTheFlag: every bad value is refused with exit code 2
// and a message that names its flag.
func TestFlagErrorsNameTheFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"-nodes", "2"}, "-nodes 2"},
		{[]string{"-degree", "1"}, "-degree 1"},
		{[]string{"-nodes", "10", "-degree", "10"}, "-degree 10"},
		{[]string{"-seeders", "0"}, "-seeders 0"},
		{[]string{"-nodes", "10", "-degree", "3", "-seeders", "10"}, "-seeders 10"},
		{[]string{"-channels", "0"}, "-channels 0"},
		{[]string{"-batch", "0"}, "-batch 0"},
		{[]string{"-batch", "5000"}, "-batch 5000"},
		{[]string{"-generated", "-1"}, "-generated -1"},
		{[]string{"-generated", "10", "-ledger", "x.json"}, "-generated and -ledger"},
		{[]string{"-workers", "0"}, "-workers 0"},
		{[]string{"-per-request", "-1ms"}, "-per-request -1ms"},
		{[]string{"-per-object", "-1ms"}, "-per-object -1ms"},
		{[]string{"-queue", "-1"}, "-queue -1"},
		{[]string{"-overflow", "shed"}, `-overflow "shed"`},
		{[]string{"-peer-limits", "maybe"}, `-peer-limits "maybe"`},
		{[]string{"-min-latency", "-1ms"}, "-min-latency -1ms"},
		{[]string{"-min-latency", "20ms", "-max-latency", "10ms"}, "-max-latency 10ms"},
		{[]string{"-min-latency", "0s", "-max-latency", "0s"}, "-max-latency 0"},
		{[]string{"-time-limit", "0s"}, "-time-limit 0s"},
		{[]string{"-strategy", "scheduler,fastest"}, `-strategy "fastest"`},
		{[]string{"-nodes", "x"}, "-nodes"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(c.args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%q: exit code %d, want %d", c.args, code, exitUsage)
		}
		if !strings.Contains(stderr.String(), c.flag) {
			t.Errorf("%q: message %q does not name %q", c.args, stderr.String(), c.flag)
		}
	}
}

// TestSmallOverlayTakesTheLibrarysSeeders: without -seeders, an overlay
// too small for the default seeders gets at most -nodes - 1 of them, as
// overlay.Config does, instead of an error.
func TestSmallOverlayTakesTheLibrarysSeeders(t *testing.T) {
	o, err := parseOptions([]string{"-nodes", "3", "-degree", "2"}, &bytes.Buffer{})
	if err != nil {
		t.Fatalf("-nodes 3 -degree 2: %v", err)
	}
	if o.cfg.Seeders != 0 {
		t.Fatalf("Seeders = %d, want 0 (the overlay's default)", o.cfg.Seeders)
	}
}

func TestMissingLedgerFileFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	path := filepath.Join(t.TempDir(), "absent.json")
	if code := run([]string{"-nodes", "10", "-degree", "3", "-ledger", path}, &stdout, &stderr); code != exitFailed {
		t.Errorf("exit code %d, want %d", code, exitFailed)
	}
	if !strings.Contains(stderr.String(), "-ledger "+path) {
		t.Errorf("message %q does not name the flag and file", stderr.String())
	}
}

var small = []string{"-nodes", "20", "-degree", "4", "-seed", "3", "-generated", "60", "-time-limit", "5s"}

// TestJSONOutput: -json prints one run per strategy, in the order asked,
// with the numbers the tables show.
func TestJSONOutput(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := append(append([]string(nil), small...), "-json", "-strategy", "fixed,scheduler")
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	var out struct {
		LedgerNodes int `json:"ledger_nodes"`
		Runs        []struct {
			Strategy  string  `json:"strategy"`
			Fetching  int     `json:"fetching"`
			Completed int     `json:"completed"`
			T100      float64 `json:"t100_seconds"`
			Reached   []bool  `json:"reached"`
			Fairness  float64 `json:"fairness"`
			Wall      float64 `json:"wall_seconds"`
			Curve     []struct {
				At       float64 `json:"at_seconds"`
				Fraction float64 `json:"fraction"`
			} `json:"curve"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout.String())
	}
	if len(out.Runs) != 2 || out.Runs[0].Strategy != "fixed" || out.Runs[1].Strategy != "scheduler" {
		t.Fatalf("runs %+v, want fixed then scheduler", out.Runs)
	}
	for _, r := range out.Runs {
		if r.Fetching != 17 || r.Completed != 17 || !r.Reached[2] || r.T100 <= 0 || len(r.Curve) != 17 || r.Curve[16].Fraction != 1 || r.Curve[16].At != r.T100 {
			t.Errorf("%s: %+v", r.Strategy, r)
		}
		if !(r.Fairness > 0 && r.Fairness <= 1) || r.Wall <= 0 {
			t.Errorf("%s: fairness %v, wall %v", r.Strategy, r.Fairness, r.Wall)
		}
	}
	if !strings.Contains(stderr.String(), "17 of 17 nodes done") {
		t.Errorf("no progress line on stderr: %q", stderr.String())
	}
}

// TestTableAndSVG: the default output is a table with a column per
// strategy, and -svg writes an SVG with one curve per strategy.
func TestTableAndSVG(t *testing.T) {
	var stdout, stderr bytes.Buffer
	svg := filepath.Join(t.TempDir(), "curve.svg")
	if code := run(append(append([]string(nil), small...), "-svg", svg), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	table := stdout.String()
	// Without -seeders the overlay runs its default 3, and both the table's
	// first line and the chart's title say so (they once said 0).
	if first, _, _ := strings.Cut(table, "\n"); !strings.Contains(first, ", 3 seeders, ") {
		t.Errorf("first line %q does not say 3 seeders", first)
	}
	for _, want := range []string{"scheduler (adaptive)", "fixed 4 channels", "peer set (4 channels)", "rippled (5 peers", "time to 50%", "time to 99%", "time to 100%",
		"worst queueing delay", "peak requests waiting", "requests dropped (overload)", "bytes sent per node", "duplicate objects received", "fairness (Jain",
		"peer warnings", "links cut by peers for charges", "redials refused while cut off", "queries dropped by busy peers", "peak balance at a peer", "rippled's peer limits on"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Polylines []struct {
			Name string `xml:"data-name,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("the SVG does not parse: %v", err)
	}
	if !bytes.Contains(b, []byte("20 nodes, degree 4, 3 seeders, seed 3")) {
		t.Errorf("the SVG's title does not say 3 seeders")
	}
	if len(doc.Polylines) != 4 || !strings.HasPrefix(doc.Polylines[0].Name, "scheduler (adaptive): ") || !strings.HasPrefix(doc.Polylines[2].Name, "peer set (4 channels): ") ||
		!strings.HasPrefix(doc.Polylines[3].Name, "rippled (") {
		t.Errorf("curves %+v, want one per strategy", doc.Polylines)
	}
}

// TestQueueZeroSaysNoLimit: -queue 0, an unbounded service queue, reads
// as such in the table's header (it once read "0 waiting at most (drop
// beyond)").
func TestQueueZeroSaysNoLimit(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(append(append([]string(nil), small...), "-queue", "0", "-strategy", "scheduler"), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit code %d: %s", code, stderr.String())
	}
	if table := stdout.String(); !strings.Contains(table, "no limit on requests waiting") || strings.Contains(table, "0 waiting at most") {
		t.Errorf("the header does not say the queue is unbounded:\n%s", table)
	}
}

func TestBadSVGPathFails(t *testing.T) {
	var stdout, stderr bytes.Buffer
	svg := filepath.Join(t.TempDir(), "no-such-dir", "curve.svg")
	args := append(append([]string(nil), small...), "-strategy", "fixed", "-svg", svg)
	if code := run(args, &stdout, &stderr); code != exitFailed || !strings.Contains(stderr.String(), "-svg") {
		t.Errorf("exit code %d, message %q; want %d naming -svg", code, stderr.String(), exitFailed)
	}
}

// TestDefaultLedgerFallsBackToGenerated: without -ledger or -generated, where
// the default real ledger cannot be had (outside the repository, or in a clone
// with no ../shared/ledgers beside it), the command fetches a generated ledger
// of fallbackLeaves leaves, says so in one line on stderr, and succeeds.
func TestDefaultLedgerFallsBackToGenerated(t *testing.T) {
	outside := t.TempDir()
	clone := filepath.Join(t.TempDir(), "peersched")
	if err := os.MkdirAll(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(clone, "go.mod"), []byte("module github.com/peersched/peersched\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, says string
	}{
		{"outside the repository", outside, "not inside the peersched repository"},
		{"a clone with nothing beside it", clone, "no real ledger at " + filepath.Join(clone, "..", "shared", "ledgers", "xrpl-40000.json")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(c.dir)
			var stdout, stderr bytes.Buffer
			args := []string{"-nodes", "20", "-degree", "4", "-seed", "3", "-time-limit", "5s", "-strategy", "fixed", "-json"}
			if code := run(args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit code %d, want %d: %s", code, exitOK, stderr.String())
			}
			var notes []string
			for line := range strings.Lines(stderr.String()) {
				if strings.HasPrefix(line, "overlaysim: ") {
					notes = append(notes, line)
				}
			}
			want := "fetching a generated ledger of 261 leaves instead"
			if len(notes) != 1 || !strings.Contains(notes[0], want) || !strings.Contains(notes[0], c.says) {
				t.Fatalf("stderr notes %q, want one line saying %q and %q", notes, c.says, want)
			}
			var out struct {
				Ledger string `json:"ledger"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, stdout.String())
			}
			if out.Ledger != "generated (261 leaves, seed 3)" {
				t.Errorf("ledger %q, want the generated fallback", out.Ledger)
			}
		})
	}
}

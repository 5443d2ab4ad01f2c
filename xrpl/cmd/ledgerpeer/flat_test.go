package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// flatBuilt matches what a run that builds the flat file says of it, and
// flatServing what every run with -flat on says it serves.
var (
	flatBuilt   = regexp.MustCompile(`built \S+/nodes\.flat from the store: ([0-9]+) nodes, [0-9]+ bytes in \S+ \([0-9]+ nodes/s\)`)
	flatServing = regexp.MustCompile(`serving from nodes\.flat: ([0-9]+) nodes in [0-9]+ bytes, 2\^[0-9]+ buckets`)
)

// TestFlatBuiltOnceThenReused: with -flat on (the default), the first run
// builds the store and then its flat file, and serves from the file (the
// whole ledger fetched); a second run serves from the same file without
// building anything.
func TestFlatBuiltOnceThenReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	l, err := ledger.Generate(4, 3000)
	if err != nil {
		t.Fatal(err)
	}
	for run := range 2 {
		p := startPeer(t, "-store", dir, "-objects", "3000", "-seed", "4", "-listen", "127.0.0.1:0")
		stderr := p.stderr.String()
		built := flatBuilt.FindStringSubmatch(stderr)
		serving := flatServing.FindStringSubmatch(stderr)
		if serving == nil || serving[1] != strconv.Itoa(l.Len()) || !strings.Contains(p.first, l.Root().Hex()) {
			t.Fatalf("run %d: %q, stderr %q; want the ledger's %d nodes served from nodes.flat", run, p.first, stderr, l.Len())
		}
		if run == 0 && (built == nil || built[1] != strconv.Itoa(l.Len())) || run == 1 && strings.Contains(stderr, "built") {
			t.Fatalf("run %d: stderr %q; want the file built on the first run only", run, stderr)
		}
		fetchAll(t, l.Root(), l.Len(), p.addrs...)
		p.stop(t)
	}
}

// TestFlatRebuilt: a flat file that is missing, cut short, or of another
// ledger is built again from the store, saying why, and the ledger then
// served is the store's, whole.
func TestFlatRebuilt(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other")
	startPeer(t, "-store", other, "-objects", "400", "-seed", "6", "-listen", "127.0.0.1:0").stop(t)
	dir := filepath.Join(t.TempDir(), "store")
	startPeer(t, "-store", dir, "-objects", "500", "-seed", "5", "-listen", "127.0.0.1:0").stop(t)
	l, err := ledger.Generate(5, 500)
	if err != nil {
		t.Fatal(err)
	}
	o, err := ledger.Generate(6, 400)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, flatFile)
	for _, c := range []struct {
		name   string
		damage func() error
		says   string // on stderr, before it builds the file again
	}{
		{"missing", func() error { return os.Remove(path) }, ""},
		{"cut short", func() error { return os.Truncate(path, 1000) }, "not a whole flat store file: 1000 bytes, its header describes"},
		{"another ledger", func() error {
			b, err := os.ReadFile(filepath.Join(other, flatFile))
			if err == nil {
				err = os.WriteFile(path, b, 0o644)
			}
			return err
		}, "nodes.flat holds " + strconv.Itoa(o.Len()) + " nodes of ledger " + o.Root().Hex() + ", the store " + strconv.Itoa(l.Len()) + " of " + l.Root().Hex()},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.damage(); err != nil {
				t.Fatal(err)
			}
			p := startPeer(t, "-store", dir, "-listen", "127.0.0.1:0")
			stderr := p.stderr.String()
			if !strings.Contains(stderr, c.says) || flatBuilt.FindStringSubmatch(stderr) == nil || flatServing.FindStringSubmatch(stderr) == nil {
				t.Fatalf("stderr %q; want %q, the file built again and served", stderr, c.says)
			}
			fetchAll(t, l.Root(), l.Len(), p.addrs...)
			p.stop(t)
		})
	}
}

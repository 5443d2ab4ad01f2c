package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
)

// keepMemoryLimit puts the test process's soft memory limit back as it was
// when t ends: run sets it.
func keepMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
}

// isProfile fails t unless file holds a profile (gzip-compressed, as
// go tool pprof reads it).
func isProfile(t *testing.T, file string) {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gzip.NewReader(bytes.NewReader(raw)); err != nil {
		t.Fatalf("%s is not a profile: %v", file, err)
	}
}

// TestProfilesAndMemoryLimit: -cpuprofile and -memprofile write profiles
// of a fetch, and -memory-limit N sets the runtime's soft limit to N MiB.
func TestProfilesAndMemoryLimit(t *testing.T) {
	keepMemoryLimit(t)
	debug.SetMemoryLimit(math.MaxInt64)
	dir := t.TempDir()
	cpu, heap := filepath.Join(dir, "cpu"), filepath.Join(dir, "heap")
	code, _, stderr := runCmd(t, args("-transport", "mem", "-json", "-cpuprofile", cpu, "-memprofile", heap, "-memory-limit", "1500")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	isProfile(t, cpu)
	isProfile(t, heap)
	if got := debug.SetMemoryLimit(-1); got != 1500<<20 {
		t.Errorf("-memory-limit 1500: the runtime's limit is %d, want %d", got, 1500<<20)
	}
}

// TestMemoryLimitAutoAndOff: -memory-limit auto (the default) sets the
// limit to the heap live as the fetch begins plus the fetch's headroom,
// and none with -store mem; off and GOMEMLIMIT leave the runtime's own.
func TestMemoryLimitAutoAndOff(t *testing.T) {
	keepMemoryLimit(t)
	for _, c := range []struct {
		args []string
		env  bool // GOMEMLIMIT set
		auto bool // the limit set: live heap + headroom
	}{
		{[]string{}, false, true},
		{[]string{"-memory-limit", "auto", "-store", "mem"}, false, false},
		{[]string{"-memory-limit", "off"}, false, false},
		{[]string{"-memory-limit", "1500"}, true, false},
	} {
		if c.env {
			t.Setenv("GOMEMLIMIT", "1GiB")
		}
		debug.SetMemoryLimit(math.MaxInt64)
		if code, _, stderr := runCmd(t, args(append([]string{"-transport", "mem", "-json"}, c.args...)...)...); code != exitOK {
			t.Fatalf("%q: exit %d: %s", c.args, code, stderr)
		}
		got := debug.SetMemoryLimit(-1)
		// The ledger of 3,000 leaves the in-process peers serve is a few
		// MB: the limit is the headroom and a little more.
		if auto := got >= fetchHeadroomMiB<<20 && got < (fetchHeadroomMiB+64)<<20; auto != c.auto || (!c.auto && got != math.MaxInt64) {
			t.Errorf("%q (GOMEMLIMIT set: %v): the runtime's limit is %d; want the live heap plus %d MiB: %v", c.args, c.env, got, fetchHeadroomMiB, c.auto)
		}
	}
}

// TestProfileErrors: a profile that cannot be written is named: -cpuprofile
// before the fetch (which does not run), -memprofile after it (which
// completed, and says so). A bad -memory-limit is a usage error.
func TestProfileErrors(t *testing.T) {
	keepMemoryLimit(t)
	missing := filepath.Join(t.TempDir(), "no", "such")
	code, _, stderr := runCmd(t, args("-transport", "mem", "-json", "-cpuprofile", missing)...)
	if code != exitIncomplete || !strings.Contains(stderr, "ledgerfetch: -cpuprofile: ") {
		t.Errorf("-cpuprofile %s: exit %d, stderr %q", missing, code, stderr)
	}
	code, _, stderr = runCmd(t, args("-transport", "mem", "-json", "-memprofile", missing)...)
	if code != exitOK || !strings.Contains(stderr, "ledgerfetch: -memprofile: ") {
		t.Errorf("-memprofile %s: exit %d, stderr %q", missing, code, stderr)
	}
	for _, bad := range []string{"-1", "0", "lots", "2GiB"} {
		if _, err := parseOptions([]string{"-memory-limit", bad}, &bytes.Buffer{}); !errors.Is(err, errUsage) ||
			!strings.Contains(err.Error(), `-memory-limit "`+bad+`": want auto, off or a size in MiB (1 or more)`) {
			t.Errorf("-memory-limit %s: %v", bad, err)
		}
	}
}

// TestHeapProfilerWritesOnceAtHalfWay: the heap profile is written as the
// fetch passes half the nodes it expects, once; a fetch that never gets
// there (or does not know how many) has it written as it ends.
func TestHeapProfilerWritesOnceAtHalfWay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "heap")
	written := func() bool { _, err := os.Stat(file); return err == nil }
	h := &heapProfiler{file: file, warn: func(msg string) { t.Error(msg) }}
	h.progress(fetch.Progress{Verified: 4, Expected: 10})
	h.progress(fetch.Progress{Verified: 400})
	if written() {
		t.Fatal("written before half way")
	}
	h.progress(fetch.Progress{Verified: 5, Expected: 10})
	if !written() {
		t.Fatal("not written at half way")
	}
	isProfile(t, file)
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	h.progress(fetch.Progress{Verified: 8, Expected: 10})
	h.end()
	if written() {
		t.Fatal("written again")
	}

	h = &heapProfiler{file: file, warn: func(msg string) { t.Error(msg) }}
	h.progress(fetch.Progress{Verified: 400})
	h.end()
	if !written() {
		t.Fatal("a fetch of an unknown count: not written as it ended")
	}
	(&heapProfiler{}).end() // no -memprofile: nothing, and no panic
}

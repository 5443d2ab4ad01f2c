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
// of a fetch, and -memory-limit sets the runtime's soft limit, in MiB.
func TestProfilesAndMemoryLimit(t *testing.T) {
	keepMemoryLimit(t)
	debug.SetMemoryLimit(math.MaxInt64)
	dir := t.TempDir()
	cpu, heap := filepath.Join(dir, "cpu"), filepath.Join(dir, "heap")
	code, _, stderr := runCmd(t, args("-transport", "mem", "-json", "-cpuprofile", cpu, "-memprofile", heap, "-memory-limit", "150")...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	isProfile(t, cpu)
	isProfile(t, heap)
	if got := debug.SetMemoryLimit(-1); got != 150<<20 {
		t.Errorf("-memory-limit 150: the runtime's limit is %d, want %d", got, 150<<20)
	}
}

// TestMemoryLimitDefaultAndOff: without -memory-limit the default limit
// is set; -memory-limit 0 and GOMEMLIMIT leave the runtime's own.
func TestMemoryLimitDefaultAndOff(t *testing.T) {
	keepMemoryLimit(t)
	debug.SetMemoryLimit(math.MaxInt64)
	if code, _, stderr := runCmd(t, args("-transport", "mem", "-json")...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := debug.SetMemoryLimit(-1); got != defaultMemoryLimitMiB<<20 {
		t.Errorf("by default the runtime's limit is %d, want %d", got, defaultMemoryLimitMiB<<20)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if code, _, stderr := runCmd(t, args("-transport", "mem", "-json", "-memory-limit", "0")...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("-memory-limit 0 set the runtime's limit to %d", got)
	}
	t.Setenv("GOMEMLIMIT", "1GiB")
	if code, _, stderr := runCmd(t, args("-transport", "mem", "-json", "-memory-limit", "150")...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, -memory-limit 150 set the runtime's limit to %d", got)
	}
}

// TestProfileErrors: a profile that cannot be written is named: -cpuprofile
// before the fetch (which does not run), -memprofile after it (which
// completed, and says so).
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
	if _, err := parseOptions([]string{"-memory-limit", "-1"}, &bytes.Buffer{}); !errors.Is(err, errUsage) ||
		!strings.Contains(err.Error(), "-memory-limit -1: want 0 (no limit) or a size in MiB") {
		t.Errorf("-memory-limit -1: %v", err)
	}
}

package main

import (
	"runtime/debug"
	"testing"
)

// TestTuneGCLeavesGOGCToTheUser: without GOGC the command collects at
// gcPercent; with it, the runtime's reading of GOGC stands.
func TestTuneGCLeavesGOGCToTheUser(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	for _, c := range []struct {
		gogc string
		want int
	}{
		{"", gcPercent},
		{"200", 100}, // what the runtime read at start: 100 here
		{"off", 100},
	} {
		debug.SetGCPercent(100)
		tuneGC(func(key string) string {
			if key != "GOGC" {
				t.Errorf("read %s, want GOGC", key)
			}
			return c.gogc
		})
		if got := debug.SetGCPercent(100); got != c.want {
			t.Errorf("GOGC=%q: collecting at %d, want %d", c.gogc, got, c.want)
		}
	}
}

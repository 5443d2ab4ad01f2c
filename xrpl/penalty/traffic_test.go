package penalty

import (
	"errors"
	"testing"
)

// TestTraffic: a peer is useless once its unwanted bytes exceed its wanted
// bytes by more than the allowance, said once, with both counts; below
// that, nothing changes.
func TestTraffic(t *testing.T) {
	tr := mustNew(t, Config{UnwantedAllowance: 1000})
	for _, c := range []struct {
		total   Traffic
		useless bool
	}{
		{Traffic{Wanted: 0, Unwanted: 1000}, false},    // the allowance, just
		{Traffic{Wanted: 5000, Unwanted: 5900}, false}, // late answers, as many as good ones
		{Traffic{Wanted: 5000, Unwanted: 6001}, true},  // over
		{Traffic{Wanted: 5000, Unwanted: 9000}, false}, // already useless: not said again
	} {
		v := tr.Traffic("p", epoch, c.total)
		if (v.Useless != nil) != c.useless {
			t.Fatalf("%+v: verdict %+v, want useless %v", c.total, v, c.useless)
		}
		if v.Useless != nil {
			if v.Useless.Wanted != 5000 || v.Useless.Unwanted != 6001 || !errors.Is(v.Useless, ErrUseless) {
				t.Errorf("verdict %+v", v.Useless)
			}
			if got, want := v.Useless.Error(), "sends unwanted data: 6,001 bytes late, duplicate or unasked, against 5,000 bytes wanted"; got != want {
				t.Errorf("reason %q, want %q", got, want)
			}
		}
	}
	if !tr.Useless("p") || tr.Useless("q") {
		t.Error("Useless disagrees with the verdicts")
	}
	// The default allowance is 16 MiB.
	d := mustNew(t, Config{})
	if v := d.Traffic("p", epoch, Traffic{Unwanted: DefaultUnwantedAllowance}); v.Useless != nil {
		t.Errorf("at the default allowance: %+v", v.Useless)
	}
	if v := d.Traffic("p", epoch, Traffic{Unwanted: DefaultUnwantedAllowance + 1}); v.Useless == nil {
		t.Error("past the default allowance: not useless")
	}
	if _, err := New(Config{UnwantedAllowance: -1}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("negative allowance: %v", err)
	}
}

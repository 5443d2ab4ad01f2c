package resource_test

import (
	"testing"

	"github.com/peersched/peersched/xrpl/resource"
)

func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		queued int
		busy   bool
	}{
		{0, false},
		{191, false},
		{192, true},
		{1000, true},
	} {
		if got := resource.Busy(tc.queued); got != tc.busy {
			t.Errorf("Busy(%d) = %v, want %v", tc.queued, got, tc.busy)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct{ n, kept, cut int }{
		{0, 0, 0},
		{64, 64, 0},
		{12288, 12288, 0},
		{12289, 12288, 1},
		{20000, 12288, 7712},
	} {
		if kept, cut := resource.Truncate(tc.n); kept != tc.kept || cut != tc.cut {
			t.Errorf("Truncate(%d) = %d, %d; want %d, %d", tc.n, kept, cut, tc.kept, tc.cut)
		}
	}
}

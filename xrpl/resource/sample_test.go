package resource_test

import (
	"testing"

	"github.com/peersched/peersched/xrpl/resource"
)

func TestDecay(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   resource.Sample
		now  int64
		want resource.Sample
	}{
		{"same second keeps the sum", resource.Sample{Sum: 1000, At: 5}, 5, resource.Sample{Sum: 1000, At: 5}},
		{"a clock that runs back keeps it", resource.Sample{Sum: 1000, At: 5}, 4, resource.Sample{Sum: 1000, At: 5}},
		{"one second loses ceil(sum/32)", resource.Sample{Sum: 1000, At: 0}, 1, resource.Sample{Sum: 1000 - 32, At: 1}},
		{"rounded up: 33 loses 2", resource.Sample{Sum: 33, At: 0}, 1, resource.Sample{Sum: 31, At: 1}},
		{"1 loses 1", resource.Sample{Sum: 1, At: 0}, 1, resource.Sample{Sum: 0, At: 1}},
		{"two seconds, twice", resource.Sample{Sum: 1000, At: 0}, 2, resource.Sample{Sum: 968 - 31, At: 2}},
		{"empty moves its time only", resource.Sample{At: 3}, 10, resource.Sample{At: 10}},
		{"128 s still decays", resource.Sample{Sum: 1 << 40, At: 0}, 128, resource.Sample{Sum: decayed(1<<40, 128), At: 128}},
		{"129 s empties", resource.Sample{Sum: 1 << 40, At: 0}, 129, resource.Sample{Sum: 0, At: 129}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := resource.Decay(tc.in, tc.now); got != tc.want {
				t.Errorf("Decay(%+v, %d) = %+v, want %+v", tc.in, tc.now, got, tc.want)
			}
		})
	}
}

// decayed is the decay written out once more, a second at a time.
func decayed(sum int64, seconds int) int64 {
	for range seconds {
		sum -= (sum + 31) / 32
	}
	return sum
}

func TestChargeAndDisposition(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       resource.Sample
		now      int64
		fee      resource.Fee
		balance  int64
		disposed resource.Disposition
	}{
		{"first query", resource.Sample{}, 0, resource.FeeQuery, 7, resource.OK},
		{"decays before it adds", resource.Sample{Sum: 3200, At: 0}, 1, resource.FeeTrivial, (3200 - 100 + 1) / 32, resource.OK},
		{"just under the warning", resource.Sample{Sum: 5000*32 - 251}, 0, resource.FeeQuery, 4999, resource.OK},
		{"at the warning", resource.Sample{Sum: 5000*32 - 250}, 0, resource.FeeQuery, 5000, resource.Warn},
		{"just under the drop", resource.Sample{Sum: 25000*32 - 251}, 0, resource.FeeQuery, 24999, resource.Warn},
		{"at the drop", resource.Sample{Sum: 25000*32 - 250}, 0, resource.FeeQuery, 25000, resource.Drop},
		{"a negative fee adds nothing", resource.Sample{Sum: 320}, 0, -5, 10, resource.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, balance := resource.Charge(tc.in, tc.now, tc.fee)
			if balance != tc.balance || resource.DispositionOf(balance) != tc.disposed {
				t.Errorf("Charge(%+v, %d, %d) = balance %d (%v), want %d (%v)", tc.in, tc.now, tc.fee,
					balance, resource.DispositionOf(balance), tc.balance, tc.disposed)
			}
		})
	}
}

// peakAt sends perSecond queries in each of seconds whole seconds and returns
// the highest balance a query left.
func peakAt(perSecond, seconds int) int64 {
	var s resource.Sample
	var peak, balance int64
	for second := range int64(seconds) {
		for range perSecond {
			s, balance = resource.Charge(s, second, resource.FeeQuery)
			peak = max(peak, balance)
		}
	}
	return peak
}

// TestThresholds reproduces rippled's thresholds for TMGetObjectByHash
// queries, in a burst and sustained (ten minutes is far past settling: the
// sum moves by less than one unit a second long before).
func TestThresholds(t *testing.T) {
	for _, tc := range []struct {
		name       string
		perSecond  int
		seconds    int
		peak       int64
		disposedAt resource.Disposition
	}{
		{"639 in one second do not warn", 639, 1, 4992, resource.OK},
		{"640 in one second warn", 640, 1, 5000, resource.Warn},
		{"3,199 in one second are not dropped", 3199, 1, 24992, resource.Warn},
		{"3,200 in one second are dropped", 3200, 1, 25000, resource.Drop},
		{"20 a second settle just under the warning", 20, 600, 4999, resource.OK},
		{"21 a second warn", 21, 600, 5249, resource.Warn},
		{"100 a second settle at 24,999", 100, 600, 24999, resource.Warn},
		{"101 a second are cut off", 101, 600, 25249, resource.Drop},
	} {
		t.Run(tc.name, func(t *testing.T) {
			peak := peakAt(tc.perSecond, tc.seconds)
			if peak != tc.peak || resource.DispositionOf(peak) != tc.disposedAt {
				t.Errorf("%d queries a second for %d s: peak balance %d (%v), want %d (%v)",
					tc.perSecond, tc.seconds, peak, resource.DispositionOf(peak), tc.peak, tc.disposedAt)
			}
		})
	}
}

package fetch

import (
	"testing"
	"time"
)

func TestBatchSize(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		name      string
		perSecond float64
		limit     int
		rtt       time.Duration
		want      int
	}{
		{"no rate", 0, 4, 20 * ms, 64},
		{"no answer yet", 16, 4, 0, 64},
		{"the channels bind: 4 in 500ms carry 8 a second", 16, 4, 500 * ms, 64},
		{"the channels carry exactly the rate", 16, 4, 250 * ms, 64},
		{"the rate binds: 4 in 20ms carry 200 a second", 16, 4, 20 * ms, 800},
		{"rounded up: 3 in 40ms carry 75", 16, 3, 40 * ms, 300},
		{"a larger limit asks more: 5 in 20ms carry 250", 16, 5, 20 * ms, 1000},
		{"capped where replies fit a frame", 16, 64, 5 * ms, MaxAutoBatch},
		{"at rippled's warning rate", 20, 4, 20 * ms, 640},
		{"no limit yet", 16, 0, 20 * ms, 64},
	} {
		if got := batchSize(64, MaxAutoBatch, c.perSecond, c.limit, c.rtt); got != c.want {
			t.Errorf("%s: batchSize(64, %d, %v, %d, %v) = %d, want %d", c.name, MaxAutoBatch, c.perSecond, c.limit, c.rtt, got, c.want)
		}
	}
	if got := batchSize(8, 100, 1, 10, ms); got != 100 {
		t.Errorf("the cap: %d, want 100", got)
	}
}

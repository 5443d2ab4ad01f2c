package limit

import (
	"errors"
	"math"
	"testing"
	"time"
)

func newBucket(t *testing.T, rate, burst int64) *Bucket {
	t.Helper()
	b, err := NewBucket(rate, burst)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// op is one call on a Bucket and what it must return.
type op struct {
	take   bool // Take, else Wait
	now    time.Duration
	n      int64
	want   time.Duration
	tokens int64 // Tokens(now) after the call
}

func script(t *testing.T, b *Bucket, ops []op) {
	t.Helper()
	for i, o := range ops {
		call, f := "Wait", b.Wait
		if o.take {
			call, f = "Take", b.Take
		}
		got, err := f(o.now, o.n)
		if err != nil || got != o.want {
			t.Fatalf("op %d: %s(%v, %d) = %v, %v; want %v", i, call, o.now, o.n, got, err, o.want)
		}
		if tk := b.Tokens(o.now); tk != o.tokens {
			t.Fatalf("op %d: %d tokens after %s at %v, want %d", i, tk, call, o.now, o.tokens)
		}
	}
}

func TestBucketTenPerSecond(t *testing.T) {
	script(t, newBucket(t, 10, 5), []op{
		{take: false, now: 0, n: 5, want: 0, tokens: 5},
		{take: true, now: 0, n: 5, want: 0, tokens: 0},
		{take: true, now: 0, n: 1, want: 100 * ms, tokens: 0},
		{take: false, now: 50 * ms, n: 1, want: 50 * ms, tokens: 0},
		{take: false, now: 50 * ms, n: 3, want: 250 * ms, tokens: 0},
		{take: true, now: 100 * ms, n: 1, want: 0, tokens: 0},
		{take: true, now: 100 * ms, n: 1, want: 100 * ms, tokens: 0},
		{take: false, now: 10 * time.Second, n: 5, want: 0, tokens: 5},
		{take: true, now: 10 * time.Second, n: 0, want: 0, tokens: 5},
	})
}

func TestBucketRoundsWaitsUp(t *testing.T) {
	// A third of a second is 333333333.3ns: the wait is rounded up, and at
	// that instant the token is there.
	script(t, newBucket(t, 3, 2), []op{
		{take: true, now: 0, n: 2, want: 0, tokens: 0},
		{take: false, now: 0, n: 1, want: 333333334, tokens: 0},
		{take: false, now: 333333333, n: 1, want: 1, tokens: 0},
		{take: true, now: 333333334, n: 1, want: 0, tokens: 0},
		// 2ns of gain carried over: 999999998 billionths short.
		{take: false, now: 333333334, n: 1, want: 333333333, tokens: 0},
	})
}

func TestBucketFirstCallAtAnyTime(t *testing.T) {
	// Full from the first instant it is asked at, whatever the epoch.
	script(t, newBucket(t, 1, 2), []op{
		{take: true, now: -time.Hour, n: 2, want: 0, tokens: 0},
		{take: false, now: -time.Hour + time.Second, n: 1, want: 0, tokens: 1},
	})
	script(t, newBucket(t, 1, 2), []op{
		{take: true, now: math.MinInt64, n: 2, want: 0, tokens: 0},
		{take: false, now: math.MaxInt64, n: 2, want: 0, tokens: 2}, // elapsed saturates
	})
}

func TestBucketTimeDoesNotGoBack(t *testing.T) {
	script(t, newBucket(t, 10, 1), []op{
		{take: true, now: time.Second, n: 1, want: 0, tokens: 0},
		// Asked 40ms "earlier": the token comes 100ms after the latest
		// instant seen, 140ms after this now.
		{take: false, now: time.Second - 40*ms, n: 1, want: 140 * ms, tokens: 0},
		{take: true, now: time.Second + 100*ms, n: 1, want: 0, tokens: 0},
		// Even when now is as far back as it goes: the wait saturates.
		{take: false, now: math.MinInt64, n: 1, want: math.MaxInt64, tokens: 0},
	})
}

func TestBucketHugeRatesAndBursts(t *testing.T) {
	const maxRate = math.MaxInt64
	// The largest rate: any token is a nanosecond away at most.
	script(t, newBucket(t, maxRate, MaxBurst), []op{
		{take: true, now: 0, n: MaxBurst, want: 0, tokens: 0},
		{take: false, now: 0, n: 1, want: 1, tokens: 0},
		{take: false, now: 0, n: MaxBurst, want: 1, tokens: 0},
		{take: false, now: 1, n: MaxBurst, want: 0, tokens: MaxBurst},
		{take: false, now: math.MaxInt64, n: MaxBurst, want: 0, tokens: MaxBurst},
	})
	// The slowest refill of the largest burst: 292 years, exactly.
	script(t, newBucket(t, 1, MaxBurst), []op{
		{take: true, now: 0, n: MaxBurst, want: 0, tokens: 0},
		{take: false, now: 0, n: MaxBurst, want: time.Duration(MaxBurst) * time.Second, tokens: 0},
		{take: false, now: time.Duration(MaxBurst)*time.Second - 1, n: MaxBurst, want: 1, tokens: MaxBurst - 1},
		{take: false, now: time.Duration(MaxBurst) * time.Second, n: MaxBurst, want: 0, tokens: MaxBurst},
	})
	// A full bucket keeps no more than its burst, however long it waits.
	script(t, newBucket(t, 3, 1), []op{
		{take: true, now: 0, n: 1, want: 0, tokens: 0},
		{take: true, now: 333333334, n: 1, want: 0, tokens: 0}, // 2 billionths over the burst were lost
		{take: false, now: 333333334, n: 1, want: 333333334, tokens: 0},
	})
	// A wait that would pass the end of time saturates.
	script(t, newBucket(t, 1, MaxBurst), []op{
		{take: true, now: math.MaxInt64 - time.Second, n: MaxBurst, want: 0, tokens: 0},
		{take: false, now: math.MaxInt64 - time.Second, n: 2, want: 2 * time.Second, tokens: 0},
		{take: false, now: math.MaxInt64, n: 2, want: time.Second, tokens: 1},
	})
}

func TestBucketErrors(t *testing.T) {
	for _, c := range []struct{ rate, burst int64 }{{0, 1}, {-1, 1}, {1, 0}, {1, -1}, {1, MaxBurst + 1}, {1, math.MaxInt64}} {
		if _, err := NewBucket(c.rate, c.burst); !errors.Is(err, ErrBadBucket) {
			t.Errorf("NewBucket(%d, %d): %v", c.rate, c.burst, err)
		}
	}
	b := newBucket(t, 10, 5)
	if _, err := b.Take(0, 3); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n    int64
		want error
	}{{-1, ErrBadCount}, {math.MinInt64, ErrBadCount}, {6, ErrOverBurst}, {math.MaxInt64, ErrOverBurst}} {
		if _, err := b.Wait(0, c.n); !errors.Is(err, c.want) {
			t.Errorf("Wait(%d): %v, want %v", c.n, err, c.want)
		}
		if _, err := b.Take(0, c.n); !errors.Is(err, c.want) {
			t.Errorf("Take(%d): %v, want %v", c.n, err, c.want)
		}
	}
	if b.Tokens(0) != 2 || b.Rate() != 10 || b.Burst() != 5 {
		t.Errorf("failed calls changed the bucket: %d tokens", b.Tokens(0))
	}
}

// TestBucketAskingOftenChangesNothing: the state depends on the instants
// tokens are taken at, not on how often the bucket is asked between them.
func TestBucketAskingOftenChangesNothing(t *testing.T) {
	often, rarely := newBucket(t, 7, 3), newBucket(t, 7, 3)
	for now := time.Duration(0); now < 5*time.Second; now += 13 * ms {
		if now%(390*ms) == 0 {
			w1, _ := often.Take(now, 2)
			w2, _ := rarely.Take(now, 2)
			if w1 != w2 {
				t.Fatalf("at %v: %v vs %v", now, w1, w2)
			}
		}
		_, _ = often.Wait(now, 1)
		_ = often.Tokens(now)
	}
	const end = 5 * time.Second
	w1, _ := often.Wait(end, 3)
	w2, _ := rarely.Wait(end, 3)
	if often.level != rarely.level || w1 != w2 {
		t.Errorf("at the end: %+v vs %+v", *often, *rarely)
	}
}

func TestBucketGiveBack(t *testing.T) {
	b := newBucket(t, 10, 2) // a token every 100ms
	script(t, b, []op{
		{take: true, now: 0, n: 2, want: 0, tokens: 0},
		{take: true, now: 50 * time.Millisecond, n: 1, want: 50 * time.Millisecond, tokens: 0},
	})
	if err := b.Give(1); err != nil {
		t.Fatal(err)
	}
	// Half a token had accrued by 50ms; one given back makes 1.5.
	script(t, b, []op{
		{take: true, now: 50 * time.Millisecond, n: 1, want: 0, tokens: 0},
		{take: false, now: 50 * time.Millisecond, n: 1, want: 50 * time.Millisecond, tokens: 0},
	})
	// Never above the burst.
	if err := b.Give(2); err != nil {
		t.Fatal(err)
	}
	if err := b.Give(2); err != nil {
		t.Fatal(err)
	}
	if got := b.Tokens(50 * time.Millisecond); got != 2 {
		t.Fatalf("%d tokens after giving back more than the burst, want 2", got)
	}
	if err := b.Give(-1); !errors.Is(err, ErrBadCount) {
		t.Fatalf("Give(-1): %v", err)
	}
	if err := b.Give(3); !errors.Is(err, ErrOverBurst) {
		t.Fatalf("Give(3): %v", err)
	}
	if err := b.Give(MaxBurst); !errors.Is(err, ErrOverBurst) {
		t.Fatalf("Give(MaxBurst): %v", err)
	}
}

// TestBucketAffords: how many messages of a declared size the bucket pays
// for at once, as the byte budget asks before it makes an offer.
func TestBucketAffords(t *testing.T) {
	b := newBucket(t, 1000, 1000) // a byte every millisecond, up to 1000
	for _, c := range []struct {
		take bool // take n at now first
		now  time.Duration
		n    int64
		want int64
	}{
		{now: 0, n: 0, want: math.MaxInt64}, // what costs nothing is never held back
		{now: 0, n: 1, want: 1000},
		{now: 0, n: 400, want: 2},
		{now: 0, n: 1000, want: 1},
		{take: true, now: 0, n: 800, want: 0}, // 200 left
		{now: 0, n: 400, want: 0},
		{now: 0, n: 200, want: 1},
		{now: 0, n: 0, want: math.MaxInt64},
		{now: 199 * ms, n: 400, want: 0}, // 399 bytes: one short
		{now: 200 * ms, n: 400, want: 1},
		{now: 200 * ms, n: 133, want: 3},
		{now: 10 * time.Second, n: 400, want: 2}, // full again, never above the burst
		{now: 10 * time.Second, n: 1, want: 1000},
	} {
		if c.take {
			if wait, err := b.Take(c.now, c.n); wait != 0 || err != nil {
				t.Fatalf("Take(%v, %d) = %v, %v", c.now, c.n, wait, err)
			}
		}
		if got, err := b.Affords(c.now, c.n); got != c.want || err != nil {
			t.Fatalf("Affords(%v, %d) = %d, %v; want %d", c.now, c.n, got, err, c.want)
		}
	}
	for _, c := range []struct {
		n    int64
		want error
	}{{-1, ErrBadCount}, {math.MinInt64, ErrBadCount}, {1001, ErrOverBurst}, {math.MaxInt64, ErrOverBurst}} {
		if got, err := b.Affords(10*time.Second, c.n); got != 0 || !errors.Is(err, c.want) {
			t.Errorf("Affords(%d) = %d, %v; want %v", c.n, got, err, c.want)
		}
	}
	// The largest burst and rate: no overflow.
	huge := newBucket(t, math.MaxInt64, MaxBurst)
	if got, _ := huge.Affords(0, 1); got != MaxBurst {
		t.Errorf("Affords(1) of the largest bucket = %d", got)
	}
	if got, _ := huge.Affords(0, MaxBurst); got != 1 {
		t.Errorf("Affords(MaxBurst) of the largest bucket = %d", got)
	}
}

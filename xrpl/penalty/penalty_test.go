package penalty

import (
	"errors"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
)

const ms = time.Millisecond

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		base, most time.Duration
		strikes    int
		want       time.Duration
	}{
		{50 * ms, 5 * time.Second, 0, 0},
		{50 * ms, 5 * time.Second, -1, 0},
		{50 * ms, 5 * time.Second, 1, 50 * ms},
		{50 * ms, 5 * time.Second, 2, 100 * ms},
		{50 * ms, 5 * time.Second, 3, 200 * ms},
		{50 * ms, 5 * time.Second, 7, 3200 * ms},
		{50 * ms, 5 * time.Second, 8, 5 * time.Second}, // 6.4s, capped
		{50 * ms, 5 * time.Second, 1000, 5 * time.Second},
		{time.Second, time.Second, 3, time.Second},
	} {
		if got := Backoff(c.base, c.most, c.strikes); got != c.want {
			t.Errorf("Backoff(%v, %v, %d) = %v, want %v", c.base, c.most, c.strikes, got, c.want)
		}
	}
}

func TestJittered(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		u    float64
		want time.Duration
	}{
		{100 * ms, 0, 50 * ms},
		{100 * ms, 0.5, 75 * ms},
		{100 * ms, 0.999999, 100*ms - 50}, // never d itself
		{0, 0.7, 0},
		{3, 0, 2}, // an odd d keeps the larger half
	} {
		if got := Jittered(c.d, c.u); got != c.want {
			t.Errorf("Jittered(%v, %v) = %v, want %v", c.d, c.u, got, c.want)
		}
	}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func mustNew(t *testing.T, cfg Config) *Tracker {
	t.Helper()
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// allMissing is the answer of a peer that lacks everything asked: one
// behind, or one that serves another ledger.
var allMissing = Answer{Missing: 64}

// allCorrupt is the answer of a peer that lies.
var allCorrupt = Answer{Corrupt: 64}

func TestStrikesBenchWithinJitterBounds(t *testing.T) {
	tr := mustNew(t, Config{Seed: 1, Strikes: 100})
	now := epoch
	for strike := 1; strike <= 10; strike++ {
		v := tr.Observe("bad", now, allMissing)
		longest := Backoff(DefaultBackoff, DefaultMaxBackoff, strike)
		if got := v.Until.Sub(now); got < longest/2 || got >= longest {
			t.Fatalf("strike %d: benched for %v, want [%v, %v)", strike, got, longest/2, longest)
		}
		if until, ok := tr.Benched("bad", now); !ok || !until.Equal(v.Until) {
			t.Fatalf("strike %d: Benched = %v, %v; want %v, true", strike, until, ok, v.Until)
		}
		if _, ok := tr.Benched("bad", v.Until); ok {
			t.Fatalf("strike %d: still benched when the bench ends", strike)
		}
		now = v.Until
	}
}

func TestSameSeedSameBenches(t *testing.T) {
	run := func(seed uint64) []time.Duration {
		tr := mustNew(t, Config{Seed: seed, Strikes: 100})
		var got []time.Duration
		now := epoch
		for range 8 {
			v := tr.Observe("bad", now, allMissing)
			got = append(got, v.Until.Sub(now))
			now = v.Until
		}
		return got
	}
	a, b, c := run(7), run(7), run(8)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 twice: bench %d is %v, then %v", i, a[i], b[i])
		}
	}
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatalf("seeds 7 and 8 draw the same jitter: %v", a)
	}
}

func TestEarlierStrikeDoesNotShortenBench(t *testing.T) {
	tr := mustNew(t, Config{Seed: 3, Strikes: 100})
	first := tr.Observe("bad", epoch, allMissing).Until
	// Answers still in flight come back at once: each is a strike, and
	// the bench only grows.
	prev := first
	for range 4 {
		v := tr.Observe("bad", epoch, allMissing)
		if v.Until.Before(prev) {
			t.Fatalf("bench shrank from %v to %v", prev, v.Until)
		}
		prev = v.Until
	}
	if prev.Sub(epoch) < Backoff(DefaultBackoff, DefaultMaxBackoff, 5)/2 {
		t.Fatalf("five strikes benched only %v", prev.Sub(epoch))
	}
}

func TestThreshold(t *testing.T) {
	tr := mustNew(t, Config{Seed: 1, Strikes: 3})
	now := epoch
	for i := 1; i <= 2; i++ {
		if v := tr.Observe("bad", now, Answer{Corrupt: 60, Good: 4}); v.Useless != nil {
			t.Fatalf("useless after %d strikes, threshold 3", i)
		}
	}
	v := tr.Observe("bad", now, Answer{Missing: 10, Corrupt: 50, Good: 4})
	if v.Useless == nil || !tr.Useless("bad") {
		t.Fatal("not useless after 3 strikes")
	}
	if !errors.Is(v.Useless, ErrUseless) || v.Useless.Peer != "bad" {
		t.Fatalf("verdict %#v", v.Useless)
	}
	if got, want := v.Useless.Error(), "answers with corrupt objects: 170 of 192 objects corrupt"; got != want {
		t.Fatalf("reason %q, want %q", got, want)
	}
	if v.Useless.Missing != 10 || v.Useless.Judged != 192 {
		t.Fatalf("counts %+v, want 10 missing of 192", v.Useless)
	}
	// Named once.
	if v := tr.Observe("bad", now, allCorrupt); v.Useless != nil {
		t.Fatal("named useless twice")
	}
	// Others are judged apart.
	if tr.Useless("good") {
		t.Fatal("a peer never heard of is useless")
	}
}

// TestMissingNeverUseless: a peer that lacks every object it is asked for,
// answer after answer, is behind or serves another ledger, and the two
// cannot be told apart: it is benched, its bench growing to MaxBackoff and
// no further, and never judged useless, so it is asked again when each
// bench ends. Its totals say what it lacked.
func TestMissingNeverUseless(t *testing.T) {
	tr := mustNew(t, Config{Seed: 1, Strikes: 3})
	now := epoch
	for i := range 1000 {
		v := tr.Observe("behind", now, allMissing)
		if v.Useless != nil || tr.Useless("behind") {
			t.Fatalf("strike %d: useless for missing objects: %v", i+1, v.Useless)
		}
		if v.StruckOut != (i+1 == 3) {
			t.Fatalf("strike %d: StruckOut %v, want it on the third alone", i+1, v.StruckOut)
		}
		if d := v.Until.Sub(now); d <= 0 || d > DefaultMaxBackoff {
			t.Fatalf("strike %d: benched %v, want (0, %v]", i+1, d, DefaultMaxBackoff)
		}
		if _, ok := tr.Benched("behind", v.Until); ok {
			t.Fatalf("strike %d: still benched when the bench ends", i+1)
		}
		now = v.Until
	}
	// Lacking, and then lying: the lies alone count toward useless.
	tr.Observe("behind", now, Answer{Good: 10})
	for range 3 {
		tr.Observe("behind", now, Answer{Corrupt: 4, Missing: 60})
	}
	if !tr.Useless("behind") {
		t.Fatal("12 corrupt objects of 22 sent, 3 strikes in a row: not useless")
	}
	if got, want := tr.Totals("behind"), (Answer{Good: 10, Missing: 64*1000 + 180, Corrupt: 12}); got != want {
		t.Fatalf("Totals %+v, want %+v", got, want)
	}
	if got := tr.Totals("stranger"); got != (Answer{}) {
		t.Fatalf("Totals of a peer never judged: %+v", got)
	}
}

func TestCorruptReason(t *testing.T) {
	tr := mustNew(t, Config{Strikes: 1})
	v := tr.Observe("liar", epoch, Answer{Corrupt: 9612, Good: 3, Missing: 1})
	if v.Useless == nil {
		t.Fatal("not useless")
	}
	if got, want := v.Useless.Error(), "answers with corrupt objects: 9,612 of 9,616 objects corrupt"; got != want {
		t.Fatalf("reason %q, want %q", got, want)
	}
}

func TestRecovery(t *testing.T) {
	tr := mustNew(t, Config{Seed: 1, Strikes: 3})
	now := epoch
	tr.Observe("p", now, allMissing)
	tr.Observe("p", now, allMissing)
	// A mostly good answer (ties count as good) clears strikes and bench.
	if v := tr.Observe("p", now, Answer{Good: 32, Missing: 32}); !v.Until.IsZero() {
		t.Fatalf("still benched until %v after a good answer", v.Until)
	}
	if _, ok := tr.Benched("p", now); ok {
		t.Fatal("Benched after a good answer")
	}
	// Two more strikes do not reach the threshold of three in a row.
	for range 2 {
		if v := tr.Observe("p", now, allMissing); v.Useless != nil {
			t.Fatal("strikes before the good answer were counted")
		}
	}
}

func TestMostlyGoodHistoryIsNotUseless(t *testing.T) {
	// A long honest run, then a bad patch: strikes and benches, but the
	// peer gave far more good objects than bad, so it is not thrown out.
	tr := mustNew(t, Config{Seed: 1, Strikes: 3})
	tr.Observe("p", epoch, Answer{Good: 10_000})
	for range 10 {
		if v := tr.Observe("p", epoch, allCorrupt); v.Useless != nil {
			t.Fatal("useless despite a mostly good history")
		}
	}
	if _, ok := tr.Benched("p", epoch); !ok {
		t.Fatal("a bad patch is not benched")
	}
}

func TestEmptyAnswerChangesNothing(t *testing.T) {
	tr := mustNew(t, Config{Seed: 1, Strikes: 1})
	if v := tr.Observe("p", epoch, Answer{}); v != (Verdict{}) || tr.Useless("p") {
		t.Fatalf("empty answer judged: %+v", v)
	}
	v := tr.Observe("p", epoch, allMissing)
	if w := tr.Observe("p", epoch.Add(ms), Answer{}); !w.Until.Equal(v.Until) || w.Useless != nil {
		t.Fatalf("empty answer changed the bench: %+v then %+v", v, w)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{{Backoff: -1}, {MaxBackoff: -1}, {Strikes: -1}} {
		if _, err := New(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%+v) = %v, want ErrBadConfig", cfg, err)
		}
	}
	tr := mustNew(t, Config{Backoff: time.Second, MaxBackoff: ms})
	if got := tr.Observe(peer.ID("p"), epoch, allMissing).Until.Sub(epoch); got < 500*ms || got >= time.Second {
		t.Fatalf("MaxBackoff below Backoff: benched %v, want [500ms, 1s)", got)
	}
}

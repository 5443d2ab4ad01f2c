package overlay

import (
	"errors"
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
)

// chainLedger builds a ledger whose two leaves share their first shared
// nibbles, so that it is shared+1 levels deep: a chain of single-child
// inner nodes, as order book directories make in real ledgers.
func chainLedger(t *testing.T, shared int) *ledger.Ledger {
	t.Helper()
	var a, b ledger.Hash
	a[shared/2] = 0x10 >> (4 * (shared % 2)) // nibble shared differs: 1 against 0
	l, err := ledger.Build([]ledger.Entry{{Key: a, Data: []byte("a")}, {Key: b, Data: []byte("b")}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLedgerDepth(t *testing.T) {
	for _, shared := range []int{0, 1, 5, 48} {
		if got := ledgerDepth(chainLedger(t, shared)); got != shared+1 {
			t.Errorf("two leaves sharing %d nibbles: depth %d, want %d", shared, got, shared+1)
		}
	}
}

// TestLowerBoundByHand checks the bound where it can be worked out: two
// fetching nodes beside one seeder, every link 10ms one way, a service of
// 1ms + 20µs per object. The seeder answers each level at once, so each
// costs one round trip and a service time: 21.02ms a level.
func TestLowerBoundByHand(t *testing.T) {
	for _, shared := range []int{0, 3, 48} {
		cfg := Config{Ledger: chainLedger(t, shared), Nodes: 3, Degree: 2, Seeders: 1,
			MinLatency: 10 * time.Millisecond, MaxLatency: 10 * time.Millisecond}
		b, err := LowerBound(cfg)
		if err != nil {
			t.Fatal(err)
		}
		want := Bound{Depth: shared + 1, T100: time.Duration(shared+2) * 21020 * time.Microsecond}
		if b != want {
			t.Errorf("chain of %d: %+v, want %+v", shared, b, want)
		}
	}
}

// TestLowerBoundHolds runs every strategy and checks that none beats the
// bound: on a generated ledger and on a deep chain, where the bound is
// tight enough to matter.
func TestLowerBoundHolds(t *testing.T) {
	for _, cfg := range []Config{testConfig(t, 3), {Ledger: chainLedger(t, 20), Nodes: 12, Degree: 3, Seed: 2, TimeLimit: 4 * time.Second}} {
		b, err := LowerBound(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if b.T100 <= 0 {
			t.Fatalf("bound %v", b)
		}
		for _, st := range Strategies {
			r := mustRun(t, cfg, st)
			if !r.Reached[2] {
				continue
			}
			if got := time.Duration(r.T100); got < b.T100 {
				t.Errorf("%s on %d nodes: every node done at %v, before the bound %v", st, cfg.Nodes, got, b.T100)
			}
		}
	}
}

func TestLowerBoundBadConfig(t *testing.T) {
	if _, err := LowerBound(Config{Nodes: 10, Degree: 3}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("no ledger: %v, want ErrBadConfig", err)
	}
}

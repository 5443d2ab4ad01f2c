package hedge

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustBudget(t *testing.T, c BudgetConfig) *Budget {
	t.Helper()
	b, err := NewBudget(c)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// run plays a script on b: 's' is a request sent (Sent), 'h' a hedge asked
// for (Spend, its verdict written as 'H' if allowed and 'x' if not), 'r' a
// refund; the result is the script with the verdicts.
func run(b *Budget, script string) string {
	var out strings.Builder
	for _, c := range script {
		switch c {
		case 's':
			b.Sent()
			out.WriteByte('s')
		case 'h':
			if b.Spend() {
				out.WriteByte('H')
			} else {
				out.WriteByte('x')
			}
		case 'r':
			b.Refund()
			out.WriteByte('r')
		}
	}
	return out.String()
}

// TestBudgetScripts: which hedges a budget allows, call by call, and the
// tokens it holds at the end.
func TestBudgetScripts(t *testing.T) {
	for _, c := range []struct {
		name   string
		cfg    BudgetConfig
		script string
		want   string
		tokens int
	}{
		{"the burst, then nothing", BudgetConfig{Burst: 2}, "hhh", "HHx", 0},
		{"the default burst is 10", BudgetConfig{}, strings.Repeat("h", 11), strings.Repeat("H", 10) + "x", 0},
		{"20 requests earn a hedge at 5%", BudgetConfig{Burst: 1},
			"h" + strings.Repeat("s", 19) + "h" + "s" + "h",
			"H" + strings.Repeat("s", 19) + "x" + "s" + "H", 0},
		{"the cap defaults to the burst: a full budget earns nothing", BudgetConfig{Burst: 1},
			strings.Repeat("s", 40) + "hh", strings.Repeat("s", 40) + "Hx", 0},
		{"a higher cap saves what requests earn", BudgetConfig{Burst: 1, Cap: 3},
			strings.Repeat("s", 100) + "hhhh", strings.Repeat("s", 100) + "HHHx", 0},
		{"500 per thousand: every second request", BudgetConfig{PerThousand: 500, Burst: 1},
			"hsshssh", "HssHssH", 0},
		{"1000 per thousand: every request", BudgetConfig{PerThousand: 1000, Burst: 1},
			"hhshsh", "HxsHsH", 0},
		{"1 per thousand", BudgetConfig{PerThousand: 1, Burst: 1, Cap: 2},
			strings.Repeat("s", 999) + "h" + "s" + "hh", strings.Repeat("s", 999) + "H" + "s" + "Hx", 0},
		{"a refund gives the token back", BudgetConfig{Burst: 1}, "hrhh", "HrHx", 0},
		{"a refund stops at the cap", BudgetConfig{Burst: 1}, "rrhh", "rrHx", 0},
		{"thousandths carry over", BudgetConfig{PerThousand: 300, Burst: 1, Cap: 2},
			"h" + "sss" + "h" + "sss" + "h", "H" + "sss" + "x" + "sss" + "H", 0},
		{"unspent", BudgetConfig{Burst: 2, Cap: 5}, strings.Repeat("s", 60), strings.Repeat("s", 60), 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := mustBudget(t, c.cfg)
			if got := run(b, c.script); got != c.want {
				t.Errorf("%s\ngot  %s\nwant %s", c.script, got, c.want)
			}
			if got := b.Tokens(); got != c.tokens {
				t.Errorf("%d tokens left, want %d", got, c.tokens)
			}
		})
	}
}

// TestBudgetBound: however requests, hedges and refunds interleave, the
// hedges sent (allowed and not refunded) never exceed Burst plus
// PerThousand thousandths of the requests; and with a cap that the
// earnings never reach, a budget spent at every chance reaches the bound.
func TestBudgetBound(t *testing.T) {
	for i, c := range []BudgetConfig{
		{}, {Burst: 1}, {PerThousand: 1, Burst: 1}, {PerThousand: 1000, Burst: 3, Cap: 7},
		{PerThousand: 37, Burst: 5, Cap: 1000}, {PerThousand: 50, Burst: 10, Cap: int(min(MaxTokens, 1<<40))},
	} {
		b := mustBudget(t, c)
		per, burst := c.PerThousand, c.Burst
		if per == 0 {
			per = DefaultPerThousand
		}
		if burst == 0 {
			burst = DefaultBurst
		}
		r := rand.New(rand.NewPCG(2, uint64(i)))
		requests, hedges := 0, 0
		for n := range 100_000 {
			switch r.IntN(4) {
			case 0:
				if b.Spend() {
					hedges++
					if r.IntN(10) == 0 {
						b.Refund()
						hedges--
					}
				}
			default:
				b.Sent()
				requests++
			}
			if bound := burst + per*requests/1000; hedges > bound {
				t.Fatalf("config %+v, call %d: %d hedges for %d requests, above %d", c, n, hedges, requests, bound)
			}
		}
	}
	// Spending at every chance with a cap out of reach meets the bound.
	b := mustBudget(t, BudgetConfig{PerThousand: 50, Burst: 10, Cap: 1 << 20})
	hedges := 0
	for range 1000 {
		b.Sent()
		for b.Spend() {
			hedges++
		}
	}
	if hedges != 10+50 {
		t.Errorf("%d hedges for 1000 requests, want 60", hedges)
	}
}

// TestBudgetConfigErrors: out-of-range fields fail with ErrBadBudget.
func TestBudgetConfigErrors(t *testing.T) {
	for _, c := range []BudgetConfig{
		{PerThousand: -1}, {PerThousand: 1001}, {Burst: -1}, {Cap: -1},
		{Burst: 5, Cap: 4}, {Cap: 4}, // the default burst, 10, is above 4
	} {
		if b, err := NewBudget(c); !errors.Is(err, ErrBadBudget) || b != nil {
			t.Errorf("%+v: %v, %v; want ErrBadBudget", c, b, err)
		}
	}
	if MaxTokens <= int64(^uint32(0)>>1) {
		return // a 32-bit int cannot name a cap above MaxTokens
	}
	over := int(MaxTokens) + 1
	if _, err := NewBudget(BudgetConfig{Burst: 1, Cap: over}); !errors.Is(err, ErrBadBudget) {
		t.Errorf("cap %d above MaxTokens: %v", over, err)
	}
	b := mustBudget(t, BudgetConfig{PerThousand: 1000, Burst: int(MaxTokens)})
	b.Sent()
	b.Refund()
	if b.Tokens() != int(MaxTokens) {
		t.Errorf("a full budget of MaxTokens holds %d after earning", b.Tokens())
	}
}

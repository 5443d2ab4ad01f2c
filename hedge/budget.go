package hedge

import (
	"errors"
	"fmt"
	"math"
)

// Defaults for the zero fields of BudgetConfig.
const (
	// DefaultPerThousand lets 50 hedges in every thousand requests: 5%.
	DefaultPerThousand = 50
	// DefaultBurst lets 10 hedges before any request has earned one.
	DefaultBurst = 10
)

// MaxTokens is the largest Burst or Cap accepted: the budget's count of
// thousandths of a token, plus one request's earnings, must fit in an int64.
const MaxTokens int64 = math.MaxInt64/milli - 1

// milli is how many thousandths make a token.
const milli = 1000

// ErrBadBudget is returned by NewBudget for a BudgetConfig out of range.
var ErrBadBudget = errors.New("hedge: bad budget")

// BudgetConfig describes a Budget. The zero value means every default.
type BudgetConfig struct {
	// PerThousand is how many hedges each thousand requests earn, from 1
	// to 1000 (every request may then be hedged once). 0 means
	// DefaultPerThousand.
	PerThousand int
	// Burst is how many hedges the budget allows before any request has
	// earned one: the tokens it starts with. 0 means DefaultBurst.
	Burst int
	// Cap is the most tokens the budget saves: what requests earn beyond
	// it is lost. 0 means Burst. It must be at least Burst and at most
	// MaxTokens.
	Cap int
}

// Budget decides whether a hedge may be sent: a token budget that requests
// fill and hedges drain (see the package documentation for its bound).
//
// A Budget is not safe for concurrent use: a sender that uses it from
// callbacks guards it with its own lock. The zero value is not usable;
// build one with NewBudget.
type Budget struct {
	level int64 // thousandths of a token held: 0..limit
	earn  int64 // thousandths earned per request
	limit int64 // Cap in thousandths
}

// NewBudget returns a budget holding c.Burst tokens. It fails with an
// error wrapping ErrBadBudget if a field of c is out of range.
func NewBudget(c BudgetConfig) (*Budget, error) {
	if c.PerThousand == 0 {
		c.PerThousand = DefaultPerThousand
	}
	if c.Burst == 0 {
		c.Burst = DefaultBurst
	}
	if c.Cap == 0 {
		c.Cap = c.Burst
	}
	if c.PerThousand < 1 || c.PerThousand > milli || c.Burst < 1 || c.Cap < c.Burst || int64(c.Cap) > MaxTokens {
		return nil, fmt.Errorf("%w: %d per thousand (1 to %d), burst %d (at least 1), cap %d (burst to %d)",
			ErrBadBudget, c.PerThousand, milli, c.Burst, c.Cap, MaxTokens)
	}
	return &Budget{level: int64(c.Burst) * milli, earn: int64(c.PerThousand), limit: int64(c.Cap) * milli}, nil
}

// Sent records a request sent that is not a hedge: it earns its share of a
// token, as far as the cap allows. (A hedge earns nothing: hedges must not
// fund hedges.)
func (b *Budget) Sent() {
	b.level = min(b.level+b.earn, b.limit)
}

// Spend takes one token for a hedge about to be sent and reports true, or
// reports false, changing nothing, if the budget holds less than one.
func (b *Budget) Spend() bool {
	if b.level < milli {
		return false
	}
	b.level -= milli
	return true
}

// Refund gives back the token of a hedge that Spend allowed but that was
// not sent after all (withdrawn while it waited, not queued, or discarded
// at a stop), as far as the cap allows.
func (b *Budget) Refund() {
	b.level = min(b.level+milli, b.limit)
}

// Tokens returns how many hedges the budget would allow now, one after
// another, with no request in between.
func (b *Budget) Tokens() int {
	return int(b.level / milli)
}

package hedge_test

import (
	"fmt"

	"github.com/peersched/peersched/hedge"
)

// A sender records every request it sends and asks the budget before each
// hedge: with 5% and a burst of 2, the first two hedges go at once, and
// after that one more for every twenty requests.
func ExampleBudget() {
	b, err := hedge.NewBudget(hedge.BudgetConfig{PerThousand: 50, Burst: 2})
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Spend(), b.Spend(), b.Spend())
	for range 20 {
		b.Sent()
	}
	fmt.Println(b.Spend(), b.Spend())
	// Output:
	// true true false
	// true false
}

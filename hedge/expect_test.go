package hedge_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/hedge"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/receiver"
)

type answer struct{ from string }

// A request sent with Send declares its response type, and its hedge
// declares the same: each refuses a response of another type, which leaves
// it live, and the first response of the right type wins.
func TestHedgeExpectsTheSameType(t *testing.T) {
	inBubble(t, hedge.BudgetConfig{}, func(w *world) {
		w.connect("A", 1)
		b := w.connect("B", 1)
		r := newOutcomes()
		id := w.send("A", offer.Request{Message: "get x", Receiver: r, Soft: soft, Timeout: hard,
			Expect: reflect.TypeFor[answer]()})
		w.advance(soft)
		hedged := b.only(t)

		require.ErrorIs(t, w.s.Deliver("A", id, "x from A"), receiver.ErrWrongResponseType)
		require.ErrorIs(t, w.s.Deliver("B", hedged.id, "x from B"), receiver.ErrWrongResponseType)
		require.Empty(t, r.of(w.call(id)), "both requests are still live")
		require.Equal(t, uint64(2), w.s.Stats().WrongType)

		require.NoError(t, w.s.Deliver("B", hedged.id, answer{"B"}))
		require.Equal(t, []string{"response from B: {B}"}, r.of(w.call(id)))
		w.advance(2 * time.Second)
		require.Equal(t, []string{"response from B: {B}"}, r.of(w.call(id)), "one call")
	})
}

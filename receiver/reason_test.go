package receiver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every reason is an error matched by errors.Is with itself, through any
// wrapping, and with no other reason; a timeout is also a deadline.
func TestReasonsAreErrors(t *testing.T) {
	reasons := []Reason{Timeout, Disconnected, Shutdown, Refused}
	for _, r := range reasons {
		var err error = r
		wrapped := fmt.Errorf("peersched: request to %q: %w", "A", r)
		require.ErrorIs(t, err, r)
		require.ErrorIs(t, wrapped, r)
		for _, other := range reasons {
			if other != r {
				require.NotErrorIs(t, wrapped, other, "%v matched %v", r, other)
			}
		}
		require.Equal(t, r == Timeout, errors.Is(wrapped, context.DeadlineExceeded), "%v and context.DeadlineExceeded", r)
		require.NotErrorIs(t, wrapped, context.Canceled)

		var got Reason
		require.True(t, errors.As(wrapped, &got))
		require.Equal(t, r, got)
		require.Equal(t, r.String(), r.Error(), "a reason prints alike as an error and as a value")
		require.Equal(t, r.String(), fmt.Sprintf("%v", err))
	}
	require.Equal(t, "Reason(9)", Reason(9).Error())
	require.NotErrorIs(t, Reason(9), context.DeadlineExceeded)
}

// A reason passed as an error costs no allocation: it is a uint8 in an
// interface, which Go stores without boxing.
func TestReasonAsErrorDoesNotAllocate(t *testing.T) {
	var sink error
	allocs := testing.AllocsPerRun(100, func() {
		sink = Timeout
		if !errors.Is(sink, context.DeadlineExceeded) {
			t.Fatal("a timeout is a deadline")
		}
	})
	require.Zero(t, allocs)
}

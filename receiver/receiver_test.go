package receiver

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestIDRangeValidate(t *testing.T) {
	for _, r := range []IDRange{{}, {1, 2}, {1 << 24, 1 << 32}, {5, 1<<64 - 1}} {
		require.NoError(t, r.Validate(), "%+v", r)
	}
	for _, r := range []IDRange{{0, 10}, {10, 10}, {10, 9}, {0, 0xff}} {
		require.ErrorIs(t, r.Validate(), ErrBadIDRange, "%+v", r)
	}
	require.Equal(t, uint64(1<<32-1<<24), IDRange{1 << 24, 1 << 32}.Size())
}

func TestReasonNames(t *testing.T) {
	require.Equal(t, "timeout", Timeout.String())
	require.Equal(t, "disconnected", Disconnected.String())
	require.Equal(t, "shutdown", Shutdown.String())
	require.Equal(t, "refused", Refused.String())
	require.Equal(t, "Reason(9)", Reason(9).String())
}

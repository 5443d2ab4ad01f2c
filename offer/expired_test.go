package offer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/receiver"
)

func TestZeroOfferIsExpired(t *testing.T) {
	var o Offer
	require.Zero(t, o.Len())
	require.Zero(t, o.Size())
	require.Zero(t, o.Remaining())
	_, ok := o.Channel(0)
	require.False(t, ok)
	_, err := o.Request(0, "x", receiver.Funcs{}, time.Second)
	require.ErrorIs(t, err, ErrExpired)
	require.ErrorIs(t, o.Notify(0, "x", time.Second), ErrExpired)
}

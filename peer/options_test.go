package peer

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/limit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ownLimiter is a host's own Limiter, fixed at one limit.
type ownLimiter struct{ limit int }

func (l *ownLimiter) Limit() int           { return l.limit }
func (l *ownLimiter) Observe(limit.Sample) {}

func TestOptionsNewLimiter(t *testing.T) {
	l, err := Options{}.NewLimiter()
	require.NoError(t, err)
	v, ok := l.(*limit.Vegas)
	require.True(t, ok, "the default is Vegas")
	require.Equal(t, DefaultStartLimit, v.Limit())

	l, err = Options{Bounds: limit.Bounds{Min: 2, Start: 3, Max: 9}}.NewLimiter()
	require.NoError(t, err)
	require.Equal(t, 3, l.Limit())

	own := &ownLimiter{limit: 7}
	l, err = Options{Limiter: own, Bounds: limit.Bounds{Min: 9}}.NewLimiter()
	require.NoError(t, err)
	require.Same(t, own, l, "the host's own limiter, bounds ignored")

	_, err = Options{Bounds: limit.Bounds{Min: 3, Start: 2, Max: 9}}.NewLimiter()
	require.True(t, errors.Is(err, limit.ErrBadBounds), "%v", err)
}

func TestOptionsNewPacer(t *testing.T) {
	p, err := Options{}.NewPacer()
	require.NoError(t, err)
	require.Nil(t, p, "the zero Rate paces nothing")

	r := limit.Rate{Cost: 250, PerSecond: 4000, Burst: 1000}
	p, err = Options{Rate: r}.NewPacer()
	require.NoError(t, err)
	require.Equal(t, r, p.Rate())
	require.EqualValues(t, 4, p.Allows(0))

	_, err = Options{Rate: limit.Rate{Cost: 2, PerSecond: 1, Burst: 1}}.NewPacer()
	require.True(t, errors.Is(err, limit.ErrBadRate), "%v", err)
}

package peerpool

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/peer"
)

// setLimiter is a Limiter whose limit is whatever the test sets next: each
// Observe takes the value in next and records the sample.
type setLimiter struct {
	limit, next int
	samples     []limit.Sample
	panics      any
}

func (l *setLimiter) Limit() int { return l.limit }

func (l *setLimiter) Observe(s limit.Sample) {
	if l.panics != nil {
		panic(l.panics)
	}
	l.samples = append(l.samples, s)
	l.limit = l.next
}

func answered(rtt time.Duration) limit.Sample { return limit.Sample{Outcome: limit.Answered, RTT: rtt} }

func usageOf(t *testing.T, pl *Pool, id peer.ID) peer.Usage {
	t.Helper()
	for _, u := range pl.Usage(nil) {
		if u.ID == id {
			return u
		}
	}
	t.Fatalf("%s not connected", id)
	return peer.Usage{}
}

func TestLowerLimitRetiresChannelsAsTheirMessagesEnd(t *testing.T) {
	var pl Pool
	l := &setLimiter{limit: 4}
	ref, err := pl.ConnectLimited(fakePeer("a"), "a", l, l.Limit())
	require.NoError(t, err)
	for i := range 4 {
		require.Equal(t, i+1, pl.Close(ref), "Close says how many the peer has in flight")
	}
	l.next = 2
	require.Nil(t, pl.Observe(ref, answered(time.Millisecond)))
	require.Equal(t, peer.Usage{ID: "a", Channels: 4, ChannelsClosed: 4, Limit: 2, RTT: time.Millisecond}, usageOf(t, &pl, "a"),
		"nothing in flight is taken away")
	pl.ForgetOpened()
	require.False(t, pl.Reopen(ref), "above the limit: the channel retires")
	require.False(t, pl.Reopen(ref))
	require.Empty(t, pl.TakeOpened(nil), "a retired channel is no opening")
	require.Equal(t, peer.Usage{ID: "a", Channels: 2, ChannelsClosed: 2, Limit: 2, RTT: time.Millisecond}, usageOf(t, &pl, "a"))
	require.True(t, pl.Reopen(ref), "within the limit: it opens")
	require.Equal(t, []peer.ID{"a"}, pl.TakeOpened(nil))
	require.Equal(t, 1, pl.Open())
	require.Equal(t, 1, pl.ClosedChannels())

	// Lowered below what is in flight while a channel is open: the open
	// one goes at once.
	l.next = 1
	require.Nil(t, pl.Observe(ref, answered(time.Millisecond)))
	require.Equal(t, peer.Usage{ID: "a", Channels: 1, ChannelsClosed: 1, Limit: 1, RTT: time.Millisecond}, usageOf(t, &pl, "a"))
	require.Zero(t, pl.Open())
	require.Empty(t, pl.Best(nil, 0), "a peer at its limit offers nothing")
	require.Zero(t, pl.Close(ref))
}

func TestHigherLimitOpensChannelsAtOnce(t *testing.T) {
	var pl Pool
	l := &setLimiter{limit: 1}
	ref, err := pl.ConnectLimited(fakePeer("a"), "a", l, l.Limit())
	require.NoError(t, err)
	require.Equal(t, 1, pl.Close(ref))
	pl.ForgetOpened()
	l.next = 3
	require.Nil(t, pl.Observe(ref, limit.Sample{Outcome: limit.TimedOut, RTT: time.Second, InFlight: 1}))
	require.Equal(t, []peer.ID{"a"}, pl.TakeOpened(nil), "new channels are reported as an opening")
	require.Equal(t, peer.Usage{ID: "a", Channels: 3, ChannelsOpen: 2, ChannelsClosed: 1, Limit: 3, RTT: time.Second}, usageOf(t, &pl, "a"))
	require.Len(t, pl.Best(nil, 0), 2)
	require.Equal(t, 3, pl.Best(nil, 1)[0].Limit, "a choice carries its peer's limit")
	require.Equal(t, []limit.Sample{{Outcome: limit.TimedOut, RTT: time.Second, InFlight: 1}}, l.samples)

	// A limit the pool cannot count is clamped; a fixed peer never moves.
	l.next = 0
	require.Nil(t, pl.Observe(ref, answered(time.Millisecond)))
	require.Equal(t, 1, usageOf(t, &pl, "a").Limit)
	fixed, err := pl.Connect(fakePeer("b"), "b", 2)
	require.NoError(t, err)
	require.Nil(t, pl.Observe(fixed, limit.Sample{Outcome: limit.TimedOut, RTT: time.Second}))
	require.Equal(t, peer.Usage{ID: "b", Channels: 2, ChannelsOpen: 2, Limit: 2, RTT: time.Second}, usageOf(t, &pl, "b"))
}

// TestAFailureMovesTheLimitButNotTheResponseTime: a refusal (limit.Failed)
// reaches the limiter, but a fast "no" must not make an overloaded peer the
// fastest in the pool's ranking.
func TestAFailureMovesTheLimitButNotTheResponseTime(t *testing.T) {
	var pl Pool
	l := &setLimiter{limit: 2}
	slow, err := pl.ConnectLimited(fakePeer("a"), "a", l, l.Limit())
	require.NoError(t, err)
	steady, err := pl.Connect(fakePeer("b"), "b", 2)
	require.NoError(t, err)
	require.Nil(t, pl.Observe(slow, answered(50*time.Millisecond)))
	require.Nil(t, pl.Observe(steady, answered(20*time.Millisecond)))

	pl.Close(slow)
	l.next = 1
	refusal := limit.Sample{Outcome: limit.Failed, RTT: time.Millisecond}
	require.Nil(t, pl.Observe(slow, refusal))
	require.Equal(t, []limit.Sample{{Outcome: limit.Failed, RTT: time.Millisecond, InFlight: 1}}, l.samples[1:])
	require.Equal(t, peer.Usage{ID: "a", Channels: 1, ChannelsClosed: 1, Limit: 1, RTT: 50 * time.Millisecond}, usageOf(t, &pl, "a"))
	pl.Reopen(slow)
	for range 20 {
		require.Nil(t, pl.Observe(slow, refusal))
		require.Nil(t, pl.Observe(steady, refusal))
	}
	require.Equal(t, 50*time.Millisecond, usageOf(t, &pl, "a").RTT)
	require.Equal(t, 20*time.Millisecond, usageOf(t, &pl, "b").RTT, "a fixed peer's response time ignores refusals too")
	best := pl.Best(nil, 0)
	require.Equal(t, peer.ID("b"), best[0].ID, "the peer that answers in 20ms still ranks first")
}

func TestLimiterPanicKeepsTheLimit(t *testing.T) {
	var pl Pool
	l := &setLimiter{limit: 2, next: 5, panics: "limiter exploded"}
	ref, err := pl.ConnectLimited(fakePeer("a"), "a", l, 2)
	require.NoError(t, err)
	p := pl.Observe(ref, answered(time.Millisecond))
	require.NotNil(t, p)
	require.Equal(t, "limiter exploded", p.Value)
	require.Contains(t, string(p.Stack), "peerpool.(*setLimiter).Observe")
	require.Equal(t, 2, usageOf(t, &pl, "a").Limit)
	require.Equal(t, 2, pl.Open())
}

func TestConnectLimitedRejectsBadInput(t *testing.T) {
	var pl Pool
	_, err := pl.ConnectLimited(fakePeer("a"), "a", nil, 1)
	require.ErrorIs(t, err, peer.ErrNilLimiter)
	_, err = pl.ConnectLimited(nil, "a", &setLimiter{limit: 1}, 1)
	require.ErrorIs(t, err, peer.ErrNilPeer)
	ref, err := pl.ConnectLimited(fakePeer("a"), "a", &setLimiter{}, 0)
	require.NoError(t, err)
	require.Equal(t, 1, usageOf(t, &pl, "a").Limit, "a start below one is clamped")
	_, err = pl.ConnectLimited(fakePeer("a"), "a", &setLimiter{limit: 1}, 1)
	require.ErrorIs(t, err, peer.ErrAlreadyConnected)
	require.Equal(t, 1, pl.Len())
	require.Equal(t, 1, pl.Close(ref))
}

// limitPanics is a Limiter whose Limit panics.
type limitPanics struct{}

func (limitPanics) Limit() int           { panic("no limit to give") }
func (limitPanics) Observe(limit.Sample) {}

func TestFirstLimitRecoversAPanic(t *testing.T) {
	n, p := FirstLimit(&setLimiter{limit: 3})
	require.Equal(t, 3, n)
	require.Nil(t, p)
	n, p = FirstLimit(limitPanics{})
	require.Zero(t, n)
	require.NotNil(t, p)
	require.Equal(t, "no limit to give", p.Value)
	require.Contains(t, string(p.Stack), "peerpool.limitPanics.Limit")
}

package peer

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakePeer ID

func (f fakePeer) ID() ID                 { return ID(f) }
func (f fakePeer) Send(uint64, any) error { return nil }

func TestConnectRejectsBadInputAndChangesNothing(t *testing.T) {
	var pl Pool
	_, err := pl.Connect(nil, "x", 1)
	require.ErrorIs(t, err, ErrNilPeer)
	_, err = pl.Connect(fakePeer("a"), ID("a"), 0)
	require.ErrorIs(t, err, ErrBadChannels)
	_, err = pl.Connect(fakePeer("a"), ID("a"), -3)
	require.ErrorIs(t, err, ErrBadChannels)
	_, err = pl.Connect(fakePeer("a"), ID("a"), 2)
	require.NoError(t, err)
	_, err = pl.Connect(fakePeer("a"), ID("a"), 5)
	require.ErrorIs(t, err, ErrAlreadyConnected)
	require.Equal(t, 1, pl.Len())
	require.Equal(t, 2, pl.Open())
	_, err = pl.Disconnect("nobody")
	require.ErrorIs(t, err, ErrUnknownPeer)
	require.Equal(t, 2, pl.Open())
}

func TestReconnectedPeerIsNew(t *testing.T) {
	var pl Pool
	old, err := pl.Connect(fakePeer("a"), ID("a"), 2)
	require.NoError(t, err)
	require.NotZero(t, pl.Close(old))
	pl.ObserveRTT(old, 50*time.Millisecond)
	_, err = pl.Disconnect("a")
	require.NoError(t, err)
	require.Zero(t, pl.Open())
	require.Zero(t, pl.ClosedChannels())

	fresh, err := pl.Connect(fakePeer("a"), ID("a"), 3)
	require.NoError(t, err)
	require.Equal(t, old.Slot(), fresh.Slot(), "the slot is reused")
	require.NotEqual(t, old, fresh)
	require.False(t, pl.Reopen(old), "the old connection's channel must not reopen on the new one")
	require.Zero(t, pl.Close(old))
	pl.ObserveRTT(old, time.Second)
	u := pl.Usage(nil)
	require.Equal(t, []Usage{{ID: "a", Channels: 3, Open: 3, Limit: 3}}, u, "nothing of the old peer leaks into the new one")
}

func TestCloseAndReopenConserveChannels(t *testing.T) {
	var pl Pool
	ref, err := pl.Connect(fakePeer("a"), ID("a"), 2)
	require.NoError(t, err)
	require.NotZero(t, pl.Close(ref))
	require.NotZero(t, pl.Close(ref))
	require.Zero(t, pl.Close(ref), "no open channel left")
	require.Equal(t, 0, pl.Open())
	require.Equal(t, 2, pl.ClosedChannels())
	before := pl.Openings()
	require.True(t, pl.Reopen(ref))
	require.True(t, pl.Reopen(ref))
	require.False(t, pl.Reopen(ref), "no closed channel left")
	require.Equal(t, before+2, pl.Openings())
	require.Equal(t, 2, pl.Open())
}

func TestBestOrdersByLoadThenRTTThenID(t *testing.T) {
	var pl Pool
	refs := map[ID]Ref{}
	for _, spec := range []struct {
		id       ID
		channels int
		closed   int
		rtt      time.Duration
	}{
		{"busy", 3, 2, time.Millisecond},
		{"slow", 2, 0, 90 * time.Millisecond},
		{"fast", 2, 0, 10 * time.Millisecond},
		{"new-b", 1, 0, 0},
		{"new-a", 1, 0, 0},
	} {
		ref, err := pl.Connect(fakePeer(spec.id), ID(spec.id), spec.channels)
		require.NoError(t, err)
		refs[spec.id] = ref
		for range spec.closed {
			require.NotZero(t, pl.Close(ref))
		}
		if spec.rtt > 0 {
			pl.ObserveRTT(ref, spec.rtt)
		}
	}
	var got []ID
	for _, c := range pl.Best(nil, 0) {
		got = append(got, c.ID)
	}
	// First channels of the idle peers (no samples first, then by RTT), then
	// their second channels ranked as if the first were closed, then the busy one.
	require.Equal(t, []ID{"new-a", "new-b", "fast", "slow", "fast", "slow", "busy"}, got)

	got = got[:0]
	for _, c := range pl.Best(nil, 3) {
		got = append(got, c.ID)
	}
	require.Equal(t, []ID{"new-a", "new-b", "fast"}, got)
}

// bruteBest ranks every open channel by sorting them all: slow, obviously right.
func bruteBest(pl *Pool) []string {
	type ch struct {
		load int32
		rtt  time.Duration
		id   ID
	}
	var all []ch
	for _, slot := range pl.slotOf {
		r := &pl.records[slot]
		for k := int32(0); k < r.open(); k++ {
			all = append(all, ch{r.closed + k, r.rtt, r.id})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.load != b.load {
			return a.load < b.load
		}
		if a.rtt != b.rtt {
			return a.rtt < b.rtt
		}
		return a.id < b.id
	})
	out := make([]string, len(all))
	for i, c := range all {
		out[i] = fmt.Sprint(c.id)
	}
	return out
}

func TestBestMatchesBruteForceUnderRandomOperations(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var pl Pool
	refs := map[ID]Ref{}
	limiters := map[ID]*setLimiter{}
	for step := range 5000 {
		id := ID(fmt.Sprintf("p%02d", rng.IntN(40)))
		ref, connected := refs[id]
		switch op := rng.IntN(10); {
		case op == 0 && connected:
			_, err := pl.Disconnect(id)
			require.NoError(t, err)
			delete(refs, id)
			delete(limiters, id)
		case !connected && op%2 == 0:
			r, err := pl.Connect(fakePeer(id), ID(id), 1+rng.IntN(8))
			require.NoError(t, err)
			refs[id] = r
		case !connected:
			l := &setLimiter{limit: 1 + rng.IntN(8)}
			r, err := pl.ConnectLimited(fakePeer(id), ID(id), l, l.limit)
			require.NoError(t, err)
			refs[id], limiters[id] = r, l
		case op < 5:
			pl.Close(ref)
		case op < 7:
			pl.Reopen(ref)
		case op < 8:
			pl.Unclose(ref)
		default:
			if l := limiters[id]; l != nil {
				l.next = 1 + rng.IntN(8)
			}
			require.Nil(t, pl.Observe(ref, answered(time.Duration(1+rng.IntN(5))*time.Millisecond)))
		}
		want := bruteBest(&pl)
		var got []string
		for _, c := range pl.Best(nil, 0) {
			got = append(got, fmt.Sprint(c.ID))
		}
		if len(want) == 0 {
			want = nil
		}
		require.Equal(t, want, got, "step %d", step)
		if len(want) > 0 {
			// A shorter list is the same ranking cut short, appended after
			// what dst already holds.
			k := 1 + rng.IntN(len(want))
			prefix := pl.Best([]Choice{{ID: "kept"}}, k)
			require.Len(t, prefix, 1+k, "step %d", step)
			require.Equal(t, ID("kept"), prefix[0].ID)
			for i, c := range prefix[1:] {
				require.Equal(t, want[i], fmt.Sprint(c.ID), "step %d: Best(%d)[%d]", step, k, i)
			}
		}
		open, closed := 0, 0
		for _, u := range pl.Usage(nil) {
			require.Equal(t, u.Channels, u.Open+u.Closed)
			require.Equal(t, max(u.Limit-u.Closed, 0), u.Open, "step %d: %+v", step, u)
			open += u.Open
			closed += u.Closed
		}
		require.Equal(t, open, pl.Open())
		require.Equal(t, closed, pl.ClosedChannels())
	}
}

func TestBestDoesNotAllocateOnceWarm(t *testing.T) {
	var pl Pool
	for i := range 100 {
		_, err := pl.Connect(fakePeer(ID(fmt.Sprint(i))), ID(fmt.Sprint(i)), 4)
		require.NoError(t, err)
	}
	dst := make([]Choice, 0, 64)
	pl.Best(dst, 64)
	allocs := testing.AllocsPerRun(100, func() { dst = pl.Best(dst[:0], 64) })
	require.Zero(t, allocs)
}

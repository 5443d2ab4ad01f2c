package peerpool

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/peer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type fakePeer peer.ID

func (f fakePeer) ID() peer.ID                    { return peer.ID(f) }
func (f fakePeer) Send(peer.RequestID, any) error { return nil }

func TestConnectRejectsBadInputAndChangesNothing(t *testing.T) {
	var pl Pool
	_, err := pl.Connect(nil, "x", 1)
	require.ErrorIs(t, err, peer.ErrNilPeer)
	_, err = pl.Connect(fakePeer("a"), peer.ID("a"), 0)
	require.ErrorIs(t, err, peer.ErrBadChannels)
	_, err = pl.Connect(fakePeer("a"), peer.ID("a"), -3)
	require.ErrorIs(t, err, peer.ErrBadChannels)
	_, err = pl.Connect(fakePeer("a"), peer.ID("a"), 2)
	require.NoError(t, err)
	_, err = pl.Connect(fakePeer("a"), peer.ID("a"), 5)
	require.ErrorIs(t, err, peer.ErrAlreadyConnected)
	require.Equal(t, 1, pl.Len())
	require.Equal(t, 2, pl.Open())
	_, err = pl.Disconnect("nobody")
	require.ErrorIs(t, err, peer.ErrUnknownPeer)
	require.Equal(t, 2, pl.Open())
}

func TestReconnectedPeerIsNew(t *testing.T) {
	var pl Pool
	old, err := pl.Connect(fakePeer("a"), peer.ID("a"), 2)
	require.NoError(t, err)
	require.NotZero(t, pl.Close(old))
	pl.ObserveRTT(old, 50*time.Millisecond)
	_, err = pl.Disconnect("a")
	require.NoError(t, err)
	require.Zero(t, pl.Open())
	require.Zero(t, pl.ClosedChannels())

	fresh, err := pl.Connect(fakePeer("a"), peer.ID("a"), 3)
	require.NoError(t, err)
	require.Equal(t, old.Slot(), fresh.Slot(), "the slot is reused")
	require.NotEqual(t, old, fresh)
	require.False(t, pl.Reopen(old), "the old connection's channel must not reopen on the new one")
	require.Zero(t, pl.Close(old))
	pl.ObserveRTT(old, time.Second)
	u := pl.Usage(nil)
	require.Equal(t, []peer.Usage{{ID: "a", Channels: 3, ChannelsOpen: 3, Limit: 3}}, u, "nothing of the old peer leaks into the new one")
}

func TestCloseAndReopenConserveChannels(t *testing.T) {
	var pl Pool
	ref, err := pl.Connect(fakePeer("a"), peer.ID("a"), 2)
	require.NoError(t, err)
	require.NotZero(t, pl.Close(ref))
	require.NotZero(t, pl.Close(ref))
	require.Zero(t, pl.Close(ref), "no open channel left")
	require.Equal(t, 0, pl.Open())
	require.Equal(t, 2, pl.ClosedChannels())
	pl.ForgetOpened()
	require.True(t, pl.Reopen(ref))
	require.True(t, pl.Reopen(ref))
	require.False(t, pl.Reopen(ref), "no closed channel left")
	require.Equal(t, []peer.ID{"a"}, pl.TakeOpened(nil), "the reopenings are reported")
	require.Equal(t, 2, pl.Open())
}

func TestBestOrdersByLoadThenRTTClassThenTieKey(t *testing.T) {
	var pl Pool
	pl.SetRankSeed(2)
	refs := map[peer.ID]Ref{}
	for _, spec := range []struct {
		id       peer.ID
		channels int
		closed   int
		rtt      time.Duration
	}{
		{"busy", 3, 2, time.Millisecond},
		{"slow", 2, 0, 90 * time.Millisecond},
		{"fast", 2, 0, 11 * time.Millisecond},
		{"fast-too", 2, 0, 12 * time.Millisecond}, // the same class as fast (see below): a tie
		{"new-b", 1, 0, 0},
		{"new-a", 1, 0, 0},
	} {
		ref, err := pl.Connect(fakePeer(spec.id), peer.ID(spec.id), spec.channels)
		require.NoError(t, err)
		refs[spec.id] = ref
		if spec.rtt > 0 {
			pl.ObserveRTT(ref, spec.rtt)
		}
		for range spec.closed {
			require.NotZero(t, pl.Close(ref))
		}
	}
	// Ties go to the lower tie key, whatever the ID: under seed 2, fast and
	// fast-too count as equal, and the keys reverse the IDs' order in both
	// ties. The busy peer's key is that of its second Close, the pool's
	// second.
	require.Zero(t, CompareRTTs(2, 11*time.Millisecond, 12*time.Millisecond))
	require.Equal(t, -1, CompareRTTs(2, 12*time.Millisecond, 90*time.Millisecond))
	key := func(id peer.ID) uint64 { return rankKey(pl.records[refs[id].slot].rank) }
	require.Equal(t, sentKey(1), key("busy"))
	require.Equal(t, TieKey(2, "fast"), key("fast"))
	require.Greater(t, key("new-a"), key("new-b"))
	require.Greater(t, key("fast"), key("fast-too"))
	var got []peer.ID
	for _, c := range pl.Best(nil, 0) {
		got = append(got, c.ID)
	}
	// First channels of the idle peers (no samples first, then by RTT
	// class, then by key), then their second channels ranked as if the
	// first were closed, then the busy one.
	want := []peer.ID{"new-b", "new-a", "fast-too", "fast", "slow", "fast-too", "fast", "slow", "busy"}
	require.Equal(t, want, got)

	got = got[:0]
	for _, c := range pl.Best(nil, 3) {
		got = append(got, c.ID)
	}
	require.Equal(t, want[:3], got)
}

func TestRTTClass(t *testing.T) {
	const one = 1 << 32 // a grid factor of 1, in 32.32 fixed point
	for _, tc := range []struct {
		rtt  time.Duration
		grid uint64
		want int32
	}{
		{0, one, 0},
		{-5, one, 0},
		{1, one, 1}, // the bit length of ⌊rtt·factor⌋
		{2, one, 2},
		{3, one, 2},
		{4, one, 3},
		{1 << 20, one, 21},
		{1<<21 - 1, one, 21},
		{1 << 21, one, 22},
		{2, one * 3 / 2, 2},               // ⌊3⌋
		{3, one * 3 / 2, 3},               // ⌊4.5⌋
		{1398101, one * 3 / 2, 21},        // ⌊2097151.5⌋ < 2^21
		{1398102, one * 3 / 2, 22},        // ⌊2097153⌋ ≥ 2^21: the boundary moved down to 2^21/1.5
		{1, 2*one - 1, 1},                 // ⌊1.99…⌋
		{math.MaxInt64, 2 * one, 64},      // the largest product fits
		{math.MaxInt64, 2*one - 1, 64},    // and does not wrap
		{time.Millisecond, one, 20},       // 10^6 ns: 2^19 ≤ 10^6 < 2^20
		{time.Millisecond, 2*one - 1, 21}, // 2·10^6 - a hair: 2^20 ≤ it < 2^21
	} {
		require.Equal(t, tc.want, rttClass(tc.rtt, tc.grid), "rttClass(%d, %#x)", int64(tc.rtt), tc.grid)
	}
	for seed := range uint64(1000) {
		g := rttGrid(seed)
		require.True(t, g >= one && g <= 2*one, "seed %d: grid factor %#x outside [1, 2]", seed, g)
	}
}

// TestCompareRTTs table-tests the tolerance: over many seeds, two response
// times never rank the slower first, always differ from a ratio of 2, and
// otherwise differ for a share log2(ratio) of the seeds.
func TestCompareRTTs(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		a, b      time.Duration
		different float64 // the share of seeds for which a ranks before b
	}{
		{0, 0, 0},
		{10 * ms, 10 * ms, 0},
		{0, 10 * ms, 1},                       // no sample yet ranks first
		{0, 1, 1},                             //
		{10 * ms, 20 * ms, 1},                 // a factor of 2: never equal
		{10 * ms, 25 * ms, 1},                 //
		{1, 2, 1},                             //
		{100 * ms, 101 * ms, math.Log2(1.01)}, // 1 %: hardly ever different
		{10 * ms, 11 * ms, math.Log2(1.1)},    // 14 %
		{10 * ms, 15 * ms, math.Log2(1.5)},    // 58 %
		{10 * ms, 19 * ms, math.Log2(1.9)},    // 93 %
	} {
		const seeds = 4000
		before := 0
		for seed := range uint64(seeds) {
			c := CompareRTTs(seed, tc.a, tc.b)
			require.Equal(t, -c, CompareRTTs(seed, tc.b, tc.a), "antisymmetric")
			require.LessOrEqual(t, c, 0, "seed %d: %v ranked after %v", seed, tc.a, tc.b)
			if c < 0 {
				before++
			}
		}
		require.InDelta(t, tc.different, float64(before)/seeds, 0.025, "%v vs %v", tc.a, tc.b)
	}
}

// TestRTTToleranceDecidesTheOrder checks that Best ranks two idle peers as
// CompareRTTs says, and by their tie keys where it says they are equal.
func TestRTTToleranceDecidesTheOrder(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct{ a, b time.Duration }{
		{0, 0}, {0, 10 * ms}, {10 * ms, 10 * ms}, {10 * ms, 11 * ms}, {12 * ms, 10 * ms}, {10 * ms, 15 * ms}, {100 * ms, 50 * ms},
	} {
		ties, orders := 0, 0
		for seed := range uint64(64) {
			var pl Pool
			pl.SetRankSeed(seed)
			ra, err := pl.Connect(fakePeer("a"), "a", 1)
			require.NoError(t, err)
			rb, err := pl.Connect(fakePeer("b"), "b", 1)
			require.NoError(t, err)
			if tc.a > 0 {
				pl.ObserveRTT(ra, tc.a)
			}
			if tc.b > 0 {
				pl.ObserveRTT(rb, tc.b)
			}
			var want peer.ID
			switch CompareRTTs(seed, tc.a, tc.b) {
			case -1:
				want = "a"
				orders++
			case 1:
				want = "b"
				orders++
			default:
				want = "b"
				if TieKey(seed, "a") < TieKey(seed, "b") {
					want = "a"
				}
				ties++
			}
			require.Equal(t, want, pl.Best(nil, 1)[0].ID, "%v vs %v, seed %d", tc.a, tc.b, seed)
			require.Equal(t, want, pl.Best(nil, 2)[0].ID, "%v vs %v, seed %d", tc.a, tc.b, seed)
		}
		t.Logf("%v vs %v: equal for %d seeds of 64, ordered by speed for %d", tc.a, tc.b, ties, orders)
	}
}

func TestEqualPeersTakeTurnsStartingWhereTheSeedSays(t *testing.T) {
	require.Equal(t, TieKey(1, "p"), TieKey(1, "p"), "a pure function")
	require.NotEqual(t, TieKey(1, "p"), TieKey(2, "p"))
	require.NotEqual(t, TieKey(1, "p"), TieKey(1, "q"))
	require.Less(t, TieKey(1, "p"), sentKey(0))

	// Eight equal peers: which one comes first depends on the seed, and
	// over many seeds each comes first about as often.
	first := map[peer.ID]int{}
	for seed := range uint64(800) {
		var pl Pool
		pl.SetRankSeed(seed)
		for i := range 8 {
			id := peer.ID(fmt.Sprint("p", i))
			_, err := pl.Connect(fakePeer(id), id, 1)
			require.NoError(t, err)
		}
		first[pl.Best(nil, 1)[0].ID]++
	}
	require.Len(t, first, 8)
	for id, n := range first {
		require.InDelta(t, 100, n, 35, "%s came first %d times in 800", id, n)
	}

	// One pool sending one message at a time over equal peers goes round
	// them: first in the order of their tie keys, then in the same order
	// again, each time to the one it sent to least recently.
	var pl Pool
	pl.SetRankSeed(3)
	var want []peer.ID
	for i := range 4 {
		id := peer.ID(fmt.Sprint("p", i))
		_, err := pl.Connect(fakePeer(id), id, 1)
		require.NoError(t, err)
		want = append(want, id)
	}
	slices.SortFunc(want, func(a, b peer.ID) int { return cmp.Compare(TieKey(3, a), TieKey(3, b)) })
	var got []peer.ID
	for range 12 {
		c := pl.Best(nil, 1)[0]
		got = append(got, c.ID)
		require.NotZero(t, pl.Close(c.Ref))
		require.True(t, pl.Reopen(c.Ref))
	}
	require.Equal(t, slices.Concat(want, want, want), got)
}

func TestSetRankSeedRekeysConnectedPeers(t *testing.T) {
	var a, b Pool
	b.SetRankSeed(9)
	for i := range 20 {
		id := peer.ID(fmt.Sprint("p", i))
		ra, err := a.Connect(fakePeer(id), id, 2)
		require.NoError(t, err)
		rb, err := b.Connect(fakePeer(id), id, 2)
		require.NoError(t, err)
		// Response times from 10 to 29 ms: which count as equal depends
		// on the seed's grid.
		a.ObserveRTT(ra, time.Duration(10+i)*time.Millisecond)
		b.ObserveRTT(rb, time.Duration(10+i)*time.Millisecond)
	}
	require.NotEqual(t, ids(b.Best(nil, 0)), ids(a.Best(nil, 0)))
	a.SetRankSeed(9)
	require.Equal(t, uint64(9), a.RankSeed())
	require.Equal(t, ids(b.Best(nil, 0)), ids(a.Best(nil, 0)), "as if connected under seed 9, response times on its grid")
	require.Equal(t, bruteBest(&a), strings(ids(a.Best(nil, 0))))
}

func ids(cs []Choice) []peer.ID {
	var out []peer.ID
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func strings(ids []peer.ID) []string {
	var out []string
	for _, id := range ids {
		out = append(out, string(id))
	}
	return out
}

// bruteBest ranks every open channel by sorting them all: slow, obviously right.
func bruteBest(pl *Pool) []string {
	type ch struct {
		load  int32
		class int32
		key   uint64
		id    peer.ID
	}
	var all []ch
	for _, slot := range pl.slotOf {
		r := &pl.records[slot]
		for k := int32(0); k < r.open(); k++ {
			all = append(all, ch{r.closed + k, rttClass(r.rtt, pl.rttGrid()), rankKey(r.rank), r.id})
		}
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.load != b.load {
			return a.load < b.load
		}
		if a.class != b.class {
			return a.class < b.class
		}
		if a.key != b.key {
			return a.key < b.key
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
	refs := map[peer.ID]Ref{}
	limiters := map[peer.ID]*setLimiter{}
	openBefore, grew := map[peer.ID]int{}, map[peer.ID]bool{}
	allowance := map[peer.ID]int{} // the paced peers' allowances

	for step := range 5000 {
		id := peer.ID(fmt.Sprintf("p%02d", rng.IntN(40)))
		ref, connected := refs[id]
		switch op := rng.IntN(10); {
		case op == 0 && connected:
			_, err := pl.Disconnect(id)
			require.NoError(t, err)
			delete(refs, id)
			delete(limiters, id)
			delete(allowance, id)
			delete(grew, id) // gone: TakeOpened names connected peers only
		case !connected && op%2 == 0:
			r, err := pl.Connect(fakePeer(id), peer.ID(id), 1+rng.IntN(8))
			require.NoError(t, err)
			refs[id] = r
		case !connected:
			l := &setLimiter{limit: 1 + rng.IntN(8)}
			r, err := pl.ConnectLimited(fakePeer(id), peer.ID(id), l, l.limit)
			require.NoError(t, err)
			refs[id], limiters[id] = r, l
		case op < 5:
			if n, paced := allowance[id]; pl.Close(ref) > 0 && paced {
				allowance[id] = n - 1
			}
		case op < 7:
			pl.Reopen(ref)
		case op < 8:
			pl.Reopen(ref)
		case rng.IntN(3) == 0:
			n := rng.IntN(6)
			pl.SetAllowance(ref, n)
			allowance[id] = n
		default:
			if l := limiters[id]; l != nil {
				l.next = 1 + rng.IntN(8)
			}
			require.Nil(t, pl.Observe(ref, answered(time.Duration(1+rng.IntN(5))*time.Millisecond)))
		}
		for id := range refs {
			if n := pl.OpenOf(id); n > openBefore[id] {
				grew[id] = true
			}
		}
		if rng.IntN(4) == 0 {
			taken := pl.TakeOpened(nil)
			require.ElementsMatch(t, slices.Sorted(maps.Keys(grew)), taken, "step %d: the peers whose open channels grew", step)
			clear(grew)
		}
		clear(openBefore)
		for id := range refs {
			openBefore[id] = pl.OpenOf(id)
		}
		require.Zero(t, pl.OpenOf("nobody"))
		checkBestOf(t, rng, &pl, step)

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
			require.Equal(t, peer.ID("kept"), prefix[0].ID)
			for i, c := range prefix[1:] {
				require.Equal(t, want[i], fmt.Sprint(c.ID), "step %d: Best(%d)[%d]", step, k, i)
			}
		}
		open, closed := 0, 0
		for _, u := range pl.Usage(nil) {
			require.Equal(t, u.Channels, u.ChannelsOpen+u.ChannelsClosed)
			want := max(u.Limit-u.ChannelsClosed, 0)
			n, paced := pl.Allowance(refs[u.ID])
			if a, ok := allowance[u.ID]; ok {
				require.True(t, paced)
				require.Equal(t, a, n, "step %d: %s's allowance", step, u.ID)
				want = min(want, a)
			} else {
				require.False(t, paced)
			}
			require.Equal(t, want, u.ChannelsOpen, "step %d: %+v", step, u)
			open += u.ChannelsOpen
			closed += u.ChannelsClosed
		}
		require.Equal(t, open, pl.Open())
		require.Equal(t, closed, pl.ClosedChannels())
	}
}

// checkBestOf checks BestOf with random Only and Avoid sets against Best:
// the same ranking, less the peers it must leave out, cut to its max.
func checkBestOf(t *testing.T, rng *rand.Rand, pl *Pool, step int) {
	t.Helper()
	var only, avoid []peer.ID
	for range rng.IntN(4) {
		only = append(only, peer.ID(fmt.Sprintf("p%02d", rng.IntN(40))))
	}
	for range rng.IntN(3) {
		avoid = append(avoid, peer.ID(fmt.Sprintf("p%02d", rng.IntN(40))))
	}
	var want []string
	for _, c := range pl.Best(nil, 0) {
		if !slices.Contains(avoid, c.ID) && (len(only) == 0 || slices.Contains(only, c.ID)) {
			want = append(want, string(c.ID))
		}
	}
	n := rng.IntN(12) // 0: all
	if n > 0 && n < len(want) {
		want = want[:n]
	}
	var got []string
	for _, c := range pl.BestOf(nil, n, only, avoid) {
		got = append(got, string(c.ID))
	}
	require.Equal(t, want, got, "step %d: BestOf(%d, only %v, avoid %v)", step, n, only, avoid)
}

func TestBestDoesNotAllocateOnceWarm(t *testing.T) {
	var pl Pool
	for i := range 100 {
		_, err := pl.Connect(fakePeer(peer.ID(fmt.Sprint(i))), peer.ID(fmt.Sprint(i)), 4)
		require.NoError(t, err)
	}
	dst := make([]Choice, 0, 64)
	pl.Best(dst, 64)
	allocs := testing.AllocsPerRun(100, func() { dst = pl.Best(dst[:0], 64) })
	require.Zero(t, allocs)
}

// While the openings are ignored, none is recorded, and what was recorded
// is forgotten; once they are kept again, the next opening is reported.
func TestIgnoreOpenedKeepsNoRecord(t *testing.T) {
	var pl Pool
	a, err := pl.Connect(fakePeer("a"), peer.ID("a"), 1)
	require.NoError(t, err)
	b, err := pl.Connect(fakePeer("b"), peer.ID("b"), 1)
	require.NoError(t, err)
	pl.IgnoreOpened(true)
	require.Empty(t, pl.TakeOpened(nil), "the connections' record is forgotten")
	require.NotZero(t, pl.Close(a))
	require.NotZero(t, pl.Close(b))
	require.True(t, pl.Reopen(a))
	require.Empty(t, pl.TakeOpened(nil), "nothing recorded while ignored")
	require.Empty(t, pl.grew)

	pl.IgnoreOpened(false)
	require.True(t, pl.Reopen(b))
	require.Equal(t, []peer.ID{"b"}, pl.TakeOpened(nil))
}

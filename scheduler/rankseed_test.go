package scheduler

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
)

func TestRankSeedZeroDrawsOneAndAnExplicitOneIsKept(t *testing.T) {
	a, err := New(Config{})
	require.NoError(t, err)
	defer a.Stop()
	b, err := New(Config{})
	require.NoError(t, err)
	defer b.Stop()
	require.NotZero(t, a.RankSeed())
	require.NotEqual(t, a.RankSeed(), b.RankSeed(), "two schedulers left to the default differ")

	c, err := New(Config{RankSeed: 42})
	require.NoError(t, err)
	defer c.Stop()
	require.Equal(t, uint64(42), c.RankSeed())
}

// equalPeers are eight peers with one channel each and no response time
// yet: equal in every way the ranking looks at.
var equalPeers = func() []peer.ID {
	var ids []peer.ID
	for i := range 8 {
		ids = append(ids, peer.ID(fmt.Sprint("p", i)))
	}
	return ids
}()

// offeredOrder returns the order in which a scheduler with the given rank
// seed lists equalPeers to a sender alone.
func offeredOrder(t *testing.T, seed uint64) []peer.ID {
	var got []peer.ID
	inBubble(t, Config{RankSeed: seed}, func(w *world) {
		for _, id := range equalPeers {
			w.connect(id, 1)
		}
		snd := &script{}
		_, err := w.s.Schedule(snd, 0)
		require.NoError(t, err)
		require.Len(t, snd.offers, 1)
		got = snd.offers[0].channels
	})
	return got
}

func TestEqualChannelsAreOfferedInTheOrderTheSeedPicks(t *testing.T) {
	first := map[peer.ID]int{}
	for seed := uint64(1); seed <= 64; seed++ {
		got := offeredOrder(t, seed)
		want := slices.Clone(equalPeers)
		slices.SortFunc(want, func(a, b peer.ID) int { return cmp.Compare(peerpool.TieKey(seed, a), peerpool.TieKey(seed, b)) })
		require.Equal(t, want, got, "seed %d: by tie key", seed)
		require.Equal(t, got, offeredOrder(t, seed), "seed %d replays", seed)
		first[got[0]]++
	}
	// Sixty-four nodes with the same view do not all start on one peer:
	// each of the eight comes first for some seed.
	require.Len(t, first, len(equalPeers), "first peers: %v", first)
}

func TestEqualPeersTakeTurns(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		for _, id := range equalPeers {
			w.connect(id, 1)
		}
		rec := newOutcomes()
		var order []peer.ID
		one := &script{onOffer: func(o offer.Offer) {
			id, err := o.Request(0, "x", rec, time.Minute)
			require.NoError(t, err)
			c, _ := o.Channel(0)
			order = append(order, c.Peer)
			// Answered at once, with no time passed: no response time
			// is learned, and the peers stay equal.
			require.NoError(t, w.s.Deliver(c.Peer, id, "ok"))
		}}
		for range 3 * len(equalPeers) {
			_, err := w.s.Schedule(one, 0)
			require.NoError(t, err)
		}
		round := order[:len(equalPeers)]
		require.ElementsMatch(t, equalPeers, round, "every peer once in a round")
		require.Equal(t, slices.Concat(round, round, round), order, "and again in the same order")
	})
}

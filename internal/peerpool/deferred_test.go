package peerpool

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
)

// TestDeferredListingIsBestAtItsMoment checks that a listing BestDeferred
// takes, once filled in, is exactly what Best listed at that moment (every
// field of every channel), whatever changed the pool in between: the
// listing's own first Close, further Closes, Reopens, response times,
// limits, allowances, peers coming and going, a new seed.
func TestDeferredListingIsBestAtItsMoment(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var pl Pool
	refs := map[peer.ID]Ref{}
	limiters := map[peer.ID]*setLimiter{}
	var list, want []Choice
	owed := false
	for step := range 20000 {
		if !owed && rng.IntN(3) == 0 {
			k := rng.IntN(12)
			want = pl.Best(want[:0], k)
			list = pl.BestDeferred(list[:0], k)
			require.Len(t, list, len(want), "step %d", step)
			if len(list) > 0 {
				require.Equal(t, want[0], list[0], "step %d: the first channel, at once", step)
				if rng.IntN(2) == 0 {
					pl.Close(list[0].Ref) // the offer's own send, the usual case
				}
			}
			owed = true
		}
		id := peer.ID(fmt.Sprintf("p%02d", rng.IntN(20)))
		ref, connected := refs[id]
		switch op := rng.IntN(12); {
		case op == 0 && connected:
			_, err := pl.Disconnect(id)
			require.NoError(t, err)
			delete(refs, id)
			delete(limiters, id)
		case !connected && op%2 == 0:
			r, err := pl.Connect(fakePeer(id), id, 1+rng.IntN(6))
			require.NoError(t, err)
			refs[id] = r
		case !connected:
			l := &setLimiter{limit: 1 + rng.IntN(6)}
			r, err := pl.ConnectLimited(fakePeer(id), id, l, l.limit)
			require.NoError(t, err)
			refs[id], limiters[id] = r, l
		case op < 5:
			pl.Close(ref)
		case op < 7:
			pl.Reopen(ref)
		case op < 8:
			pl.SetAllowance(ref, rng.IntN(6))
		case op < 9:
			pl.ObserveRTT(ref, time.Duration(1+rng.IntN(50))*time.Millisecond)
		case op < 10 && rng.IntN(20) == 0:
			pl.SetRankSeed(rng.Uint64())
		default:
			if l := limiters[id]; l != nil {
				l.next = 1 + rng.IntN(6)
			}
			require.Nil(t, pl.Observe(ref, answered(time.Duration(1+rng.IntN(50))*time.Millisecond)))
		}
		if owed && rng.IntN(3) == 0 {
			if rng.IntN(4) == 0 {
				pl.ForgetListing()
			} else {
				pl.FillListing()
				require.Equal(t, want, list, "step %d: the listing, filled in", step)
			}
			owed = false
		}
	}
}

// TestDeferredListingRanksNothingUnread checks that an offer's listing
// whose first channel is used and whose rest is never read ranks nothing
// more: the channels after the first are not written.
func TestDeferredListingRanksNothingUnread(t *testing.T) {
	var pl Pool
	for i := range 5 {
		_, err := pl.Connect(fakePeer(fmt.Sprint(i)), peer.ID(fmt.Sprint(i)), 4)
		require.NoError(t, err)
	}
	want := pl.Best(nil, 16)
	buf := make([]Choice, 16)
	for i := range buf {
		buf[i].ID = "unwritten"
	}
	list := pl.BestDeferred(buf[:0], 16)
	require.Len(t, list, 16)
	require.Equal(t, want[0], list[0])
	require.Equal(t, 1, pl.Close(list[0].Ref))
	pl.ForgetListing()
	require.Equal(t, 2, pl.Close(list[0].Ref), "no Close is recorded for a forgotten listing")
	for i := 1; i < len(list); i++ {
		require.Equal(t, peer.ID("unwritten"), list[i].ID, "channel %d", i)
	}

	// Filled in after its own Close, it lists what Best listed before it.
	pl.Reopen(list[0].Ref)
	pl.Reopen(list[0].Ref)
	want = pl.Best(want[:0], 16)
	list = pl.BestDeferred(list[:0], 16)
	pl.Close(list[0].Ref)
	pl.FillListing()
	require.Equal(t, want, list)
	require.Equal(t, 19, pl.Open(), "the Close stands")
}

func TestBestDeferredDoesNotAllocateOnceWarm(t *testing.T) {
	var pl Pool
	for i := range 10 {
		_, err := pl.Connect(fakePeer(fmt.Sprint(i)), peer.ID(fmt.Sprint(i)), 4)
		require.NoError(t, err)
	}
	dst := pl.BestDeferred(nil, 16)
	pl.FillListing()
	allocs := testing.AllocsPerRun(100, func() {
		dst = pl.BestDeferred(dst[:0], 16)
		pl.Close(dst[0].Ref)
		pl.FillListing()
		pl.Reopen(dst[0].Ref)
	})
	require.Zero(t, allocs)
}

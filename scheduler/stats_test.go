package scheduler

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
)

// TestPeerUsageIsSortedByID: PeerUsage lists every connected peer once, in
// the order of their IDs, whatever order they connected in (the pool keeps
// them in a map, whose order Go randomizes), after what dst already held.
func TestPeerUsageIsSortedByID(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		var ids []peer.ID
		for i := range 40 {
			ids = append(ids, peer.ID(fmt.Sprintf("p%02d", i)))
		}
		r := rand.New(rand.NewPCG(1, 2))
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		for i, id := range ids {
			w.connect(id, 1+i%3)
		}
		w.s.Disconnect(ids[0])

		kept := peer.Usage{ID: "zz, already there"}
		got := w.s.PeerUsage([]peer.Usage{kept})
		require.Equal(t, kept, got[0], "dst's entries stay first")
		var listed []peer.ID
		for _, u := range got[1:] {
			listed = append(listed, u.ID)
			require.Equal(t, w.fixed[u.ID], u.Channels, "peer %s", u.ID)
		}
		want := slices.Sorted(slices.Values(ids[1:]))
		require.Equal(t, want, listed)
	})
}

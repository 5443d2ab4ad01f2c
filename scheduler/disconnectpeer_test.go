package scheduler

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
)

// valuePeer is a peer.Peer whose dynamic type is not comparable (it holds a
// slice), as a host's value type might be.
type valuePeer struct {
	id   peer.ID
	tags []string
}

func (p valuePeer) ID() peer.ID                    { return p.id }
func (p valuePeer) Send(peer.RequestID, any) error { return nil }

// anyPeer is a peer.Peer of a comparable type whose values may not be:
// == panics on two that hold a slice in extra.
type anyPeer struct {
	id    peer.ID
	extra any
}

func (p anyPeer) ID() peer.ID                    { return p.id }
func (p anyPeer) Send(peer.RequestID, any) error { return nil }

// TestDisconnectPeerRemovesOnlyThatConnection: a host whose new connection
// to a peer replaces an old one, and whose old connection's reader reports
// its end late, must not lose the new one. DisconnectPeer with the old
// value changes nothing; with the new one it disconnects, as Disconnect
// would, failing the new connection's requests.
func TestDisconnectPeerRemovesOnlyThatConnection(t *testing.T) {
	for _, inline := range []bool{true, false} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			inBubbleAsIs(t, Config{InlineCallbacks: inline}, func(w *world) {
				old, current := &hostPeer{id: "A"}, &hostPeer{id: "A"}
				require.NoError(t, w.s.Connect(old, 2))
				require.NoError(t, w.s.DisconnectPeer(old), "the connected value itself")
				require.ErrorIs(t, w.s.DisconnectPeer(old), peer.ErrUnknownPeer)

				require.NoError(t, w.s.Connect(current, 2))
				rec := newOutcomes()
				var ids []peer.RequestID
				_, err := w.s.Schedule(&script{onOffer: sendFirst(rec, time.Minute, &ids)}, 0)
				require.NoError(t, err)
				w.settle()
				require.Len(t, ids, 1)

				// The old connection's late end: refused, nothing changed.
				require.ErrorIs(t, w.s.DisconnectPeer(old), peer.ErrNotThatPeer)
				w.settle()
				require.Empty(t, rec.of(ids[0]), "the new connection's request is still in flight")
				require.Equal(t, 1, w.s.Stats().RequestsInFlight)
				require.Equal(t, 2, w.usage("A").Limit)

				require.NoError(t, w.s.DisconnectPeer(current))
				w.settle()
				require.Equal(t, []string{"failure from A: disconnected"}, rec.of(ids[0]))
				require.ErrorIs(t, w.s.Disconnect("A"), peer.ErrUnknownPeer)
			})
		})
	}
}

func TestDisconnectPeerErrors(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		require.ErrorIs(t, w.s.DisconnectPeer(nil), peer.ErrNilPeer)

		v := valuePeer{id: "V", tags: []string{"x"}}
		require.NoError(t, w.s.Connect(v, 1))
		err := w.s.DisconnectPeer(v)
		require.ErrorIs(t, err, peer.ErrIncomparablePeer, "comparing it with == would panic")
		require.Contains(t, err.Error(), "valuePeer")
		require.Equal(t, 1, w.usage("V").Limit, "still connected")
		require.NoError(t, w.s.Disconnect("V"), "Disconnect by ID still works for it")

		// Of a comparable type, but holding a slice: refused, not a panic
		// under the offers lock (before: every call after it hung).
		a := anyPeer{id: "W", extra: []int{1}}
		require.NoError(t, w.s.Connect(a, 1))
		err = w.s.DisconnectPeer(anyPeer{id: "W", extra: []int{1}})
		require.ErrorIs(t, err, peer.ErrIncomparablePeer)
		require.Equal(t, 1, w.usage("W").Limit, "still connected")
		// One holding a comparable value is compared with the slice-holding
		// one without a panic: their dynamic types differ.
		require.ErrorIs(t, w.s.DisconnectPeer(anyPeer{id: "W", extra: 1}), peer.ErrNotThatPeer)
		require.NoError(t, w.s.Disconnect("W"))

		require.ErrorIs(t, w.s.DisconnectPeer(&hostPeer{id: "nobody"}), peer.ErrUnknownPeer)
		p := &hostPeer{id: "B"}
		require.NoError(t, w.s.Connect(p, 1))
		w.s.Stop()
		require.ErrorIs(t, w.s.DisconnectPeer(p), ErrStopped)
	})
}

package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
)

// TestOfferListsWhatWasOpenWhenItWasMade checks that an offer's channels
// are those open when it was made, in the order and with the loads and
// response times of then, however late the sender reads them: after its
// own send on the first channel, and after a response that reopens a
// channel and moves a peer's response time; and that a send on the second
// channel, unread, goes to the peer listed second then. (The scheduler ranks an
// offer's channels after the first only when they are read; see
// peerpool.Pool.BestDeferred.) Two schedulers in one state make the same
// offer: in one the sender reads the list first, in the other last.
func TestOfferListsWhatWasOpenWhenItWasMade(t *testing.T) {
	type seen struct {
		channels []offer.Channel
		len      int
		second   peer.ID // the peer a send on the second channel went to
	}
	run := func(readFirst bool) seen {
		var got seen
		inBubble(t, Config{MaxOfferChannels: 16}, func(w *world) {
			for _, id := range []peer.ID{"a", "b", "c", "d"} {
				w.connect(id, 3)
			}
			// Load the peers unevenly: four requests outstanding.
			out := newOutcomes()
			var ids []peer.RequestID
			for range 4 {
				_, err := w.s.Schedule(&script{onOffer: sendFirst(out, time.Minute, &ids)}, 0)
				require.NoError(t, err)
				w.settle()
			}
			require.Len(t, ids, 4)
			w.advance(40 * time.Millisecond)
			read := func(o offer.Offer) {
				got.len = o.Len()
				for _, c := range o.All() {
					got.channels = append(got.channels, c)
				}
			}
			probe := &funcSender{onOffer: func(o offer.Offer) {
				if readFirst {
					read(o)
				}
				_, err := o.Request(0, "probe", out, time.Minute)
				require.NoError(t, err)
				// A send on the second channel, before reading it.
				id, err := o.Request(1, "probe", out, time.Minute)
				require.NoError(t, err)
				got.second = w.requestPeer(id)
				c, ok := o.Channel(0)
				require.True(t, ok)
				// A response from a peer the probe did not send to first: its
				// channel reopens and its response time is sampled.
				for _, id := range ids {
					if from := w.requestPeer(id); from != c.Peer {
						require.NoError(t, w.s.Deliver(from, id, "pong"))
						break
					}
				}
				if !readFirst {
					read(o)
				}
			}}
			_, err := w.s.Schedule(probe, 0)
			require.NoError(t, err)
			w.settle()
		})
		return got
	}
	want, got := run(true), run(false)
	require.Equal(t, 8, want.len)
	require.Len(t, want.channels, 8)
	require.Equal(t, want.channels[1].Peer, want.second)
	require.Equal(t, want, got)
}

// funcSender is a sender whose OnOffer is a function, and that reads
// nothing of its offers itself (a script reads every channel first).
type funcSender struct{ onOffer func(o offer.Offer) }

func (f *funcSender) OnOffer(o offer.Offer) { f.onOffer(o) }
func (f *funcSender) OnDiscard()            {}

// requestPeer returns the peer that request id was sent to.
func (w *world) requestPeer(id peer.RequestID) peer.ID {
	for pid, p := range w.peers {
		for _, m := range p.sends() {
			if m.requestID == id {
				return pid
			}
		}
	}
	w.t.Fatalf("request %d was not sent", id)
	return ""
}

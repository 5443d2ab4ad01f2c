package offer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/internal/offerlink"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/race"
	"github.com/peersched/peersched/peer"
)

// listCarrier lists choices while live, and counts how often each way of
// reading them is asked.
type listCarrier struct {
	live     bool
	choices  []peerpool.Choice
	lists    int // OfferChannels calls
	channels int // OfferChannel calls
}

func (c *listCarrier) OfferStatus(uint64) offerlink.Status {
	return offerlink.Status{Live: c.live, Len: len(c.choices), Size: 1}
}

func (c *listCarrier) OfferChannel(_ uint64, i int) (peerpool.Choice, bool) {
	c.channels++
	if !c.live || i < 0 || i >= len(c.choices) {
		return peerpool.Choice{}, false
	}
	return c.choices[i], true
}

func (c *listCarrier) OfferChannels(_ uint64, dst []peerpool.Choice) []peerpool.Choice {
	c.lists++
	if !c.live {
		return dst
	}
	return append(dst, c.choices...)
}

func (c *listCarrier) OfferRequest(uint64, int, offerlink.Request) (peer.RequestID, error) {
	return 0, ErrExpired
}

func (c *listCarrier) OfferNotify(uint64, int, any, time.Duration) error { return ErrExpired }

type indexed struct {
	i int
	c Channel
}

func collect(o Offer) []indexed {
	var got []indexed
	for i, c := range o.All() {
		got = append(got, indexed{i, c})
	}
	return got
}

// TestAllReadsTheListOnce: All yields what Channel(i) returns for every
// index, best first, from one read of the list (one lock acquisition in
// the scheduler), not one per channel.
func TestAllReadsTheListOnce(t *testing.T) {
	c := &listCarrier{live: true, choices: []peerpool.Choice{
		{ID: "A", Closed: 0, Limit: 4, RTT: time.Millisecond},
		{ID: "B", Closed: 1, Limit: 4},
		{ID: "C", Closed: 2, Limit: 8, RTT: time.Second},
	}}
	o := Offer{carrier: c, generation: 1}
	got := collect(o)
	require.Equal(t, 1, c.lists)
	require.Zero(t, c.channels, "All does not read channel by channel")
	var want []indexed
	for i := range o.Len() {
		ch, ok := o.Channel(i)
		require.True(t, ok)
		want = append(want, indexed{i, ch})
	}
	require.Equal(t, want, got)
	require.Equal(t, indexed{2, Channel{Peer: peer.ID("C"), ChannelsClosed: 2, Limit: 8, RTT: time.Second}}, got[2])
}

// TestAllIsASnapshot: what changes while the loop body runs does not
// change what the iteration yields.
func TestAllIsASnapshot(t *testing.T) {
	c := &listCarrier{live: true, choices: []peerpool.Choice{{ID: "A"}, {ID: "B"}, {ID: "C"}}}
	o := Offer{carrier: c, generation: 1}
	var peers []peer.ID
	for _, ch := range o.All() {
		peers = append(peers, ch.Peer)
		c.choices, c.live = c.choices[:1], false // the offer expires mid-loop
	}
	require.Equal(t, []peer.ID{"A", "B", "C"}, peers)
	require.Empty(t, collect(o), "an expired offer yields nothing")
}

func TestAllStopsWhenTheBodyBreaks(t *testing.T) {
	c := &listCarrier{live: true, choices: []peerpool.Choice{{ID: "A"}, {ID: "B"}, {ID: "C"}}}
	o := Offer{carrier: c, generation: 1}
	var peers []peer.ID
	for _, ch := range o.All() {
		peers = append(peers, ch.Peer)
		if ch.Peer == "B" {
			break
		}
	}
	require.Equal(t, []peer.ID{"A", "B"}, peers)
	require.Equal(t, []peer.ID{"A", "B", "C"}, func() (all []peer.ID) {
		for _, ch := range o.All() {
			all = append(all, ch.Peer)
		}
		return all
	}(), "the buffer a break left behind was reused cleanly")
}

func TestAllOfTheZeroOffer(t *testing.T) {
	require.Empty(t, collect(Offer{}))
}

func TestAllDoesNotAllocateOnceWarm(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector makes sync.Pool drop buffers at random")
	}
	c := &listCarrier{live: true, choices: []peerpool.Choice{{ID: "A"}, {ID: "B"}, {ID: "C"}}}
	o := Offer{carrier: c, generation: 1}
	n := 0
	allocs := testing.AllocsPerRun(100, func() {
		for _, ch := range o.All() {
			n += ch.ChannelsClosed + 1
		}
	})
	require.Zero(t, allocs)
	require.Positive(t, n)
}

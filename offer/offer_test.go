package offer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type named string

func (named) OnOffer(Offer) {}
func (named) OnDiscard()    {}

// order drains what Next would offer, declining each so the next comes up.
func order(q *Queue, openings uint64) []string {
	var out []string
	for {
		t, s, ok := q.Next(openings)
		if !ok {
			return out
		}
		out = append(out, string(s.(named)))
		q.Decline(t, openings)
	}
}

func TestQueueOrdersByPriorityThenArrival(t *testing.T) {
	var q Queue
	for _, s := range []struct {
		name string
		prio int
	}{{"low1", -1}, {"mid1", 0}, {"high", 7}, {"mid2", 0}, {"low2", -1}} {
		q.Push(named(s.name), s.prio)
	}
	require.Equal(t, 5, q.Len())
	require.Equal(t, []string{"high", "mid1", "mid2", "low1", "low2"}, order(&q, 1))
	require.Empty(t, order(&q, 1), "everyone declined at openings 1")
	require.Equal(t, []string{"high", "mid1", "mid2", "low1", "low2"}, order(&q, 2), "a new opening makes them all eligible, in their places")
}

func TestQueueRemoveAndStaleTickets(t *testing.T) {
	var q Queue
	a := q.Push(named("a"), 0)
	b := q.Push(named("b"), 0)
	c := q.Push(named("c"), 3)
	s, ok := q.Remove(b)
	require.True(t, ok)
	require.Equal(t, named("b"), s)
	_, ok = q.Remove(b)
	require.False(t, ok, "a ticket works once")
	require.False(t, q.Contains(b))
	_, ok = q.Remove(0)
	require.False(t, ok)
	_, ok = q.Remove(Ticket(1 << 40))
	require.False(t, ok)

	d := q.Push(named("d"), 0) // reuses b's slot with a new generation
	require.NotEqual(t, b, d)
	require.False(t, q.Contains(b))
	require.Equal(t, []string{"c", "a", "d"}, order(&q, 1))

	_, ok = q.Remove(c)
	require.True(t, ok)
	require.Equal(t, []Sender{named("a"), named("d")}, q.RemoveAll(nil))
	require.Zero(t, q.Len())
	require.False(t, q.Contains(a))
	_, _, ok = q.Next(99)
	require.False(t, ok)
}

func TestBookChecksEverySend(t *testing.T) {
	var b Book
	choices := []peer.Choice{{ID: "A"}, {ID: "B"}, {ID: "C"}}
	gen := b.Open(42, choices, 2)
	ticket, live := b.Live()
	require.True(t, live)
	require.Equal(t, Ticket(42), ticket)
	require.Equal(t, Status{Live: true, Len: 3, Size: 2}, b.Status(gen))

	_, err := b.Claim(gen, 3)
	require.ErrorIs(t, err, ErrNoSuchChannel)
	_, err = b.Claim(gen, -1)
	require.ErrorIs(t, err, ErrNoSuchChannel)
	_, err = b.Claim(gen+1, 0)
	require.ErrorIs(t, err, ErrExpired)
	ch, err := b.Claim(gen, 1)
	require.NoError(t, err)
	require.Equal(t, peer.ID("B"), ch.Peer)
	_, err = b.Claim(gen, 1)
	require.ErrorIs(t, err, ErrChannelUsed)
	b.Unclaim(gen, 1)
	require.Zero(t, b.Status(gen).Sent, "a failed send does not count")
	_, err = b.Claim(gen, 1)
	require.NoError(t, err)
	_, err = b.Claim(gen, 0)
	require.NoError(t, err)
	_, err = b.Claim(gen, 2)
	require.ErrorIs(t, err, ErrSizeExceeded)

	require.Equal(t, 2, b.Close())
	_, err = b.Claim(gen, 2)
	require.ErrorIs(t, err, ErrExpired)
	require.Equal(t, Status{}, b.Status(gen))
	_, ok := b.Channel(gen, 0)
	require.False(t, ok)

	// The size never exceeds what the offer lists.
	gen = b.Open(43, choices[:1], 5)
	require.Equal(t, 1, b.Status(gen).Size)
}

func TestZeroOfferIsExpired(t *testing.T) {
	var o Offer
	require.Zero(t, o.Len())
	require.Zero(t, o.Size())
	require.Zero(t, o.Remaining())
	_, ok := o.Channel(0)
	require.False(t, ok)
	_, err := o.Request(0, "x", receiver.Funcs{}, time.Second)
	require.ErrorIs(t, err, ErrExpired)
	require.ErrorIs(t, o.Notify(0, "x", time.Second), ErrExpired)
}

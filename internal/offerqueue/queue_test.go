package offerqueue

import (
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"testing"

	"github.com/peersched/peersched/internal/offerlink"
	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type named string

func (named) OnOffer(offer.Offer) {}
func (named) OnDiscard()          {}

// channels is a view of open channels for Queue.Next: each peer's count.
type channels map[peer.ID]int

func (c channels) Open() (n int) {
	for _, k := range c {
		n += k
	}
	return n
}

func (c channels) OpenOf(id peer.ID) int { return c[id] }

// someOpen is one open channel, to a peer nobody names.
var someOpen = channels{"any": 1}

// order drains what Next would offer, declining each so the next comes up.
func order(q *Queue) []string {
	var out []string
	for {
		t, s, ok := q.Next(nil, someOpen)
		if !ok {
			return out
		}
		out = append(out, string(s.(named)))
		q.Decline(t)
	}
}

func TestQueueOrdersByPriorityThenArrival(t *testing.T) {
	var q Queue
	var tickets []Ticket
	for _, s := range []struct {
		name string
		prio int
	}{{"low1", -1}, {"mid1", 0}, {"high", 7}, {"mid2", 0}, {"low2", -1}} {
		tickets = append(tickets, q.Push(named(s.name), s.prio))
	}
	require.Equal(t, 5, q.Len())
	require.Equal(t, []string{"high", "mid1", "mid2", "low1", "low2"}, order(&q))
	require.Empty(t, order(&q), "everyone declined, and is parked")
	require.Equal(t, 5, q.Len(), "parked senders keep their places")
	require.Equal(t, 5, q.Parked())
	for _, i := range []int{4, 3, 1, 0, 2} { // in no particular order
		require.True(t, q.Reoffer(tickets[i], false))
	}
	require.Zero(t, q.Parked())
	require.Equal(t, []string{"high", "mid1", "mid2", "low1", "low2"}, order(&q), "reoffered, each is back in its place")
}

// TestQueueReofferKeepsThePlace: a parked sender asks again and goes back
// ahead of those that came after it; a Reoffer during its offer (or while
// its sends are in progress) keeps the offer's end from parking it; one
// that is ready already changes nothing; a stale ticket is refused.
func TestQueueReofferKeepsThePlace(t *testing.T) {
	var q Queue
	a := q.Push(named("a"), 0)
	b := q.Push(named("b"), 0)
	tk, _, _ := q.Next(nil, someOpen)
	require.Equal(t, a, tk)
	q.Decline(a)
	c := q.Push(named("c"), 0)
	require.Equal(t, []string{"b", "c"}, order(&q))
	require.True(t, q.Reoffer(c, false))
	require.True(t, q.Reoffer(a, false))
	require.Equal(t, []string{"a", "c"}, order(&q), "a is ahead of c, which came later")

	require.True(t, q.Reoffer(b, false))
	tk, _, _ = q.Next(nil, someOpen)
	require.Equal(t, b, tk)
	require.True(t, q.Reoffer(b, true), "during its offer")
	q.Decline(b)
	require.Equal(t, 2, q.Parked(), "b was not parked")
	tk, _, _ = q.Next(nil, someOpen)
	require.Equal(t, b, tk, "and is offered again")
	q.Hold(b)
	require.True(t, q.Reoffer(b, false), "while its sends are in progress")
	_, _, ok := q.Next(nil, someOpen)
	require.False(t, ok, "held")
	q.Decline(b)
	require.Equal(t, []string{"b"}, order(&q), "its sends failed: not parked, offered again")
	require.Equal(t, 3, q.Parked())

	d := q.Push(named("d"), 0)
	require.True(t, q.Reoffer(d, false), "ready already")
	require.Equal(t, []string{"d"}, order(&q), "one offer, not two")
	q.Remove(d)
	require.False(t, q.Reoffer(d, false), "gone")
	require.Equal(t, 3, q.Parked())
	q.Remove(a)
	require.Equal(t, 2, q.Parked(), "a parked sender that leaves is no longer counted")
}

// TestQueueWaitForOpening: a sender that asked, during its offer, to wait
// for an opening is not parked when it declines: it is set aside and ready
// again at the next opening of any peer it does not avoid.
func TestQueueWaitForOpening(t *testing.T) {
	var q Queue
	a := q.Push(named("a"), 0)
	q.SetWants(a, nil, []peer.ID{"X"}, 0)
	tk, _, _ := q.Next(nil, someOpen)
	require.Equal(t, a, tk)
	q.WaitForOpening(a)
	q.Decline(a)
	require.Zero(t, q.Parked())
	require.True(t, q.SetAside())
	require.Empty(t, order(&q), "waiting for an opening")
	q.Opened("X")
	require.Empty(t, order(&q), "X is avoided: its opening is not one for a")
	q.Opened("Y")
	require.Equal(t, []string{"a"}, order(&q), "Y opened; then it declined again, and is parked")
	require.Equal(t, 1, q.Parked())
}

// TestQueueMatchesWants: a sender whose wants the open channels do not
// meet is passed over, keeping its place, and is offered again when a
// channel opens that may meet them, not before: Only peers, Avoid peers,
// and MinChannels.
func TestQueueMatchesWants(t *testing.T) {
	var q Queue
	type want struct {
		only, avoid []peer.ID
		min         int
	}
	wants := map[string]want{"onlyB": {only: []peer.ID{"B", "B"}}, "notA": {avoid: []peer.ID{"A"}}, "two": {min: 2}}
	push := func(name string) Ticket {
		tk := q.Push(named(name), 0)
		w := wants[name]
		q.SetWants(tk, w.only, w.avoid, w.min)
		return tk
	}
	onlyB := push("onlyB")
	push("notA")
	push("two")
	push("plain")

	open := channels{"A": 1}
	next := func() string {
		tk, s, ok := q.Next(nil, open)
		if !ok {
			return ""
		}
		q.Remove(tk)
		push(string(s.(named))) // sent, and scheduled again at the back
		return string(s.(named))
	}
	only, avoid := q.Wants(onlyB)
	require.Equal(t, []peer.ID{"B"}, only)
	require.Empty(t, avoid)
	require.Equal(t, "plain", next(), "only A is open: nobody else may have it")
	require.True(t, q.SetAside())
	open["A"] = 2
	require.Equal(t, "plain", next(), "the others were set aside, and nothing has woken them yet")
	q.Opened("A")
	require.Equal(t, "two", next(), "two woke for A's opening, ahead of plain")
	open["B"] = 1
	q.Opened("B")
	require.Equal(t, "onlyB", next())
	require.Equal(t, "notA", next())
	require.Equal(t, "plain", next())
	open = channels{"A": 1}
	require.Equal(t, "plain", next())
	q.Opened("C") // a peer nobody waits for: wakes notA and two, which are unmet still
	require.Equal(t, "plain", next())
	require.Equal(t, 4, q.Len())
	require.Zero(t, q.Parked(), "set aside is not parked")
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
	require.Equal(t, []string{"c", "a", "d"}, order(&q))

	_, ok = q.Remove(c)
	require.True(t, ok)
	require.Equal(t, []Sender{named("a"), named("d")}, q.RemoveAll(nil))
	require.Zero(t, q.Len())
	require.False(t, q.Contains(a))
	_, _, ok = q.Next(nil, someOpen)
	require.False(t, ok)
}

// TestQueueKeepsDeclaredBytes: the size a sender declared is its own, and
// goes with it: a reused slot starts with none.
func TestQueueKeepsDeclaredBytes(t *testing.T) {
	var q Queue
	a := q.Push(named("a"), 0)
	b := q.Push(named("b"), 0)
	q.SetBytes(a, 400)
	require.Equal(t, int64(400), q.Bytes(a))
	require.Zero(t, q.Bytes(b), "declared nothing")
	q.Remove(a)
	require.Zero(t, q.Bytes(a), "gone: a stale ticket reads nothing")
	q.SetBytes(a, 7)           // a stale ticket sets nothing
	c := q.Push(named("c"), 0) // a's slot, a new generation
	require.Zero(t, q.Bytes(c), "a reused slot starts with no size")
	q.SetBytes(c, 9)
	q.RemoveAll(nil)
	d := q.Push(named("d"), 0)
	require.Zero(t, q.Bytes(d))
}

// TestQueueKeepsDeclaredCosts: the cost a sender declared is its own, goes
// with it to the sender Pick chooses, and a reused slot starts with none.
func TestQueueKeepsDeclaredCosts(t *testing.T) {
	var q Queue
	a := q.Push(named("a"), 1)
	b := q.Push(named("b"), 0)
	q.SetCost(a, 1)
	q.SetCost(b, 2000)
	require.Equal(t, int64(1), q.Cost(a))
	require.Equal(t, int64(2000), q.Cost(b))
	var c Chosen
	require.True(t, q.Pick(nil, someOpen, &c))
	require.Equal(t, a, c.Ticket)
	require.Equal(t, int64(1), c.Cost, "the chosen sender carries its cost")
	q.Remove(a)
	require.Zero(t, q.Cost(a), "gone: a stale ticket reads nothing")
	q.SetCost(a, 7)            // a stale ticket sets nothing
	d := q.Push(named("d"), 0) // a's slot, a new generation
	require.Zero(t, q.Cost(d), "a reused slot starts with no cost")
}

// TestPickFillsEveryField: Pick writes everything it chose into the
// caller's Chosen, so one reused for the next offer keeps nothing of the
// sender before (its class, its wants), and a Pick that chooses nothing
// leaves it as it was.
func TestPickFillsEveryField(t *testing.T) {
	classes, err := limit.NewClasses([]limit.Class{{Name: "fetch", Limit: 1}})
	require.NoError(t, err)
	fetch, err := classes.ID("fetch")
	require.NoError(t, err)
	var q Queue
	a := q.PushIn(named("a"), 1, fetch)
	q.SetWants(a, []peer.ID{"any"}, []peer.ID{"X"}, 0)
	q.SetBytes(a, 100)
	q.SetCost(a, 5)
	b := q.Push(named("b"), 0)

	var c Chosen
	require.True(t, q.Pick(classes.NewPass(), someOpen, &c))
	require.Equal(t, Chosen{Ticket: a, Sender: named("a"), Class: fetch, Classed: true, Bytes: 100, Cost: 5,
		Only: []peer.ID{"any"}, Avoid: []peer.ID{"X"}, slot: c.slot}, c)
	q.Remove(a)

	require.True(t, q.Pick(nil, someOpen, &c))
	require.Equal(t, Chosen{Ticket: b, Sender: named("b"), slot: c.slot}, c, "nothing of a's left")
	q.Remove(b)

	before := c
	require.False(t, q.Pick(nil, someOpen, &c), "no sender waits")
	require.Equal(t, before, c, "left as it was")
}

// TestQueuePassesOverFullClasses: a sender whose class (or an ancestor) is
// full is passed over, keeping its place; it comes first again once its
// class has room. Within one call (one pass) a class found full is not
// checked again at lower priorities, even if a release frees it meanwhile.
func TestQueuePassesOverFullClasses(t *testing.T) {
	classes, err := limit.NewClasses([]limit.Class{
		{Name: "ledger", Limit: 2},
		{Name: "fetch", Limit: 1, Parent: "ledger"},
		{Name: "tx", Limit: 1},
	})
	require.NoError(t, err)
	id := func(name string) limit.ClassID {
		c, err := classes.ID(name)
		require.NoError(t, err)
		return c
	}
	var q Queue
	fetch1 := q.PushIn(named("fetch1"), 5, id("fetch"))
	tx1 := q.PushIn(named("tx1"), 5, id("tx"))
	q.PushIn(named("fetch2"), 0, id("fetch"))
	q.PushIn(named("ledger1"), 0, id("ledger"))
	q.Push(named("plain"), 0)
	c, ok := q.Class(fetch1)
	require.True(t, ok)
	require.Equal(t, id("fetch"), c)

	pass := classes.NewPass()
	next := func() string {
		pass.Reset()
		_, s, ok := q.Next(pass, someOpen)
		if !ok {
			return ""
		}
		return string(s.(named))
	}
	// sends books one request of the sender named tk, which leaves.
	sends := func(tk Ticket, class string) {
		ok, err := classes.Book(id(class))
		require.NoError(t, err)
		require.True(t, ok)
		_, ok = q.Remove(tk)
		require.True(t, ok)
	}
	require.Equal(t, "fetch1", next())
	sends(fetch1, "fetch")
	require.Equal(t, "tx1", next())
	sends(tx1, "tx")
	require.Equal(t, "ledger1", next(), "fetch is full: fetch2 is passed over, keeping its place")
	ok, err = classes.Book(id("ledger")) // another fetch of the ledger, from elsewhere
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "plain", next(), "ledger is full too")

	// A release makes fetch2 first again (fetch is free, ledger has room).
	require.NoError(t, classes.Release(id("fetch")))
	require.Equal(t, "fetch2", next())

	// Within one pass a class found full stays full: fetch, found full at
	// priority 5, is not checked at 0 although it has room by then.
	var q2 Queue
	q2.PushIn(named("fetch-high"), 5, id("fetch"))
	q2.PushIn(named("fetch-low"), 0, id("fetch"))
	ok, _ = classes.Book(id("fetch"))
	require.True(t, ok)
	pass.Reset()
	ok, err = pass.Admits(id("fetch"))
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, classes.Release(id("fetch")))
	_, _, ok = q2.Next(pass, someOpen)
	require.False(t, ok, "neither is offered in this pass")
	pass.Reset()
	_, s, ok := q2.Next(pass, someOpen)
	require.True(t, ok)
	require.Equal(t, named("fetch-high"), s, "the next pass finds room, for the higher priority first")
}

func TestBookChecksEverySend(t *testing.T) {
	var b Book
	choices := []peerpool.Choice{{ID: "A"}, {ID: "B"}, {ID: "C"}}
	gen := b.Open(42, named("s"), choices, 2)
	ticket, live := b.Live()
	require.True(t, live)
	require.Equal(t, Ticket(42), ticket)
	require.Equal(t, offerlink.Status{Live: true, Len: 3, Size: 2}, b.Status(gen))

	_, err := b.Claim(gen, 3)
	require.ErrorIs(t, err, offer.ErrNoSuchChannel)
	_, err = b.Claim(gen, -1)
	require.ErrorIs(t, err, offer.ErrNoSuchChannel)
	_, err = b.Claim(gen+1, 0)
	require.ErrorIs(t, err, offer.ErrExpired)
	ch, err := b.Claim(gen, 1)
	require.NoError(t, err)
	require.Equal(t, peer.ID("B"), ch.ID)
	_, err = b.Claim(gen, 1)
	require.ErrorIs(t, err, offer.ErrChannelUsed)
	require.Equal(t, Decision{}, b.Finish(gen, 1, false))
	require.Zero(t, b.Status(gen).Sent, "a failed send does not count")
	_, err = b.Claim(gen, 1)
	require.NoError(t, err)
	_, err = b.Claim(gen, 0)
	require.NoError(t, err)
	_, err = b.Claim(gen, 2)
	require.ErrorIs(t, err, offer.ErrSizeExceeded, "sends in progress count against the size")
	require.Equal(t, 2, b.InProgress())

	require.Equal(t, Decision{Exit: LeftBySend, Ticket: 42}, b.Finish(gen, 1, true))
	require.Equal(t, Decision{}, b.Finish(gen, 0, true), "only the first success is an exit")
	require.Equal(t, Decision{Ticket: 42}, b.Close(gen))
	_, err = b.Claim(gen, 2)
	require.ErrorIs(t, err, offer.ErrExpired)
	require.Equal(t, offerlink.Status{}, b.Status(gen))
	_, ok := b.Channel(gen, 0)
	require.False(t, ok)
	_, live = b.Live()
	require.False(t, live)

	// The size never exceeds what the offer lists.
	gen = b.Open(43, named("t"), choices[:1], 5)
	require.Equal(t, 1, b.Status(gen).Size)
}

// step is one thing that happens to an offer in TestBookDecidesEachExit.
type step struct {
	op   string // claim i, ok i, fail i, close, expire, stop
	i    int
	want Exit // for ok, fail and close
}

// TestBookDecidesEachExit pins when an offered sender leaves (promise 1):
// at its first successful send, whenever that ends; at the close of an offer
// with no send, by declining; and, when the offer closes with sends still in
// progress, only once the last of them has ended.
func TestBookDecidesEachExit(t *testing.T) {
	cases := []struct {
		name  string
		steps []step
	}{
		{"no send: declined at close", []step{{op: "close", want: Declined}}},
		{"send ok inside the offer: leaves at once", []step{
			{op: "claim", i: 0}, {op: "ok", i: 0, want: LeftBySend}, {op: "close", want: Undecided}}},
		{"send fails inside the offer: declined at close", []step{
			{op: "claim", i: 0}, {op: "fail", i: 0, want: Undecided}, {op: "close", want: Declined}}},
		{"send outlives the offer and succeeds", []step{
			{op: "claim", i: 0}, {op: "close", want: Held}, {op: "ok", i: 0, want: LeftBySend}}},
		{"send outlives the offer and fails: declined then", []step{
			{op: "claim", i: 0}, {op: "close", want: Held}, {op: "fail", i: 0, want: Declined}}},
		{"two outlive it, the second succeeds", []step{
			{op: "claim", i: 0}, {op: "claim", i: 1}, {op: "close", want: Held},
			{op: "fail", i: 0, want: Undecided}, {op: "ok", i: 1, want: LeftBySend}}},
		{"one ok, one outlives and fails", []step{
			{op: "claim", i: 0}, {op: "claim", i: 1}, {op: "ok", i: 0, want: LeftBySend},
			{op: "close", want: Undecided}, {op: "fail", i: 1, want: Undecided}}},
		{"expired offer refuses sends but keeps the one in progress", []step{
			{op: "claim", i: 0}, {op: "expire"}, {op: "claimExpired", i: 1},
			{op: "close", want: Held}, {op: "ok", i: 0, want: LeftBySend}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b Book
			gen := b.Open(9, named("s"), []peerpool.Choice{{ID: "A"}, {ID: "B"}}, 2)
			for k, st := range c.steps {
				var d Decision
				switch st.op {
				case "claim":
					_, err := b.Claim(gen, st.i)
					require.NoError(t, err, "step %d", k)
					continue
				case "claimExpired":
					_, err := b.Claim(gen, st.i)
					require.ErrorIs(t, err, offer.ErrExpired, "step %d", k)
					continue
				case "expire":
					b.Expire()
					continue
				case "ok":
					d = b.Finish(gen, st.i, true)
				case "fail":
					d = b.Finish(gen, st.i, false)
				case "close":
					d = b.Close(gen)
				}
				require.Equal(t, st.want, d.Exit, "step %d (%s)", k, st.op)
				if d.Exit == Declined {
					require.Equal(t, Decision{Exit: Declined, Ticket: 9}, d)
				}
			}
			require.Zero(t, b.InProgress())
			require.Empty(t, b.undecided, "every record is settled")
		})
	}
}

func TestBookDiscardsAStoppedSenderUnlessItSends(t *testing.T) {
	for _, sends := range []bool{false, true} {
		var b Book
		snd := named("s")
		gen := b.Open(9, snd, []peerpool.Choice{{ID: "A"}}, 1)
		_, err := b.Claim(gen, 0)
		require.NoError(t, err)
		require.Equal(t, Held, b.Close(gen).Exit)
		var asked []Ticket
		b.StopAll(func(t Ticket) bool { asked = append(asked, t); return true })
		require.Equal(t, []Ticket{9}, asked)
		d := b.Finish(gen, 0, sends)
		if sends {
			require.Equal(t, Decision{Exit: LeftBySend, Ticket: 9}, d)
		} else {
			require.Equal(t, Decision{Exit: Declined, Ticket: 9, Discard: true, Sender: snd}, d)
		}
	}
}

// TestBookReusesARecordClean: a settled offer's record slot is reused by
// the next offer with nothing of the old one left (its sends, its close,
// its discard), and it lets go of its sender as soon as it is settled.
func TestBookReusesARecordClean(t *testing.T) {
	var b Book
	old := named("old")
	gen := b.Open(9, old, []peerpool.Choice{{ID: "A"}, {ID: "B"}}, 2)
	_, err := b.Claim(gen, 0)
	require.NoError(t, err)
	require.Equal(t, Held, b.Close(gen).Exit)
	b.StopAll(func(Ticket) bool { return true })
	require.Equal(t, Decision{Exit: Declined, Ticket: 9, Discard: true, Sender: old}, b.Finish(gen, 0, false))
	require.Empty(t, b.undecided)
	require.Nil(t, b.undecided[:1][0].sender, "the settled record lets go of its sender")

	gen = b.Open(10, named("new"), []peerpool.Choice{{ID: "A"}}, 1)
	require.Equal(t, Decision{Exit: Declined, Ticket: 10}, b.Close(gen), "not discarded, not held: a fresh record")

	// Two records, the older settled first: the younger moves down and
	// keeps its own state.
	g1 := b.Open(11, named("one"), []peerpool.Choice{{ID: "A"}}, 1)
	_, err = b.Claim(g1, 0)
	require.NoError(t, err)
	require.Equal(t, Held, b.Close(g1).Exit)
	g2 := b.Open(12, named("two"), []peerpool.Choice{{ID: "B"}}, 1)
	_, err = b.Claim(g2, 0)
	require.NoError(t, err)
	require.Equal(t, Held, b.Close(g2).Exit)
	require.Equal(t, Decision{Exit: LeftBySend, Ticket: 11}, b.Finish(g1, 0, true))
	require.Len(t, b.undecided, 1)
	require.Nil(t, b.undecided[:2][1].sender)
	require.Equal(t, Decision{Exit: Declined, Ticket: 12}, b.Finish(g2, 0, false))
	g3 := b.Open(13, named("three"), []peerpool.Choice{{ID: "A"}}, 1)
	require.Equal(t, Decision{Exit: Declined, Ticket: 13}, b.Close(g3))
}

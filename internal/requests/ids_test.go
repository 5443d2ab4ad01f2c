package requests

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/internal/race"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

func rangedFixture(t *testing.T, r receiver.IDRange, ids ...peer.ID) (*Table, map[peer.ID]peerpool.Ref) {
	t.Helper()
	require.NoError(t, r.Validate())
	tab, refs := fixture(t, ids...)
	tab.SetIDRange(r)
	return tab, refs
}

// TestRangedIDsWrapAtTheTop: IDs are issued in order from Lo and, after
// Hi-1, from Lo again.
func TestRangedIDsWrapAtTheTop(t *testing.T) {
	r := receiver.IDRange{Lo: 1<<32 - 3, Hi: 1 << 32}
	tab, refs := rangedFixture(t, r, "A")
	var got []peer.RequestID
	for range 7 {
		id := pending(tab, refs["A"])
		got = append(got, id)
		_, ended, err := tab.Respond(id, "A", nil)
		require.NoError(t, err)
		require.True(t, ended)
	}
	top := peer.RequestID(1<<32 - 1)
	require.Equal(t, []peer.RequestID{top - 2, top - 1, top, top - 2, top - 1, top, top - 2}, got)
}

// TestRangedIDsSkipOutstanding: after a wrap, an ID still outstanding is
// never issued again; the cursor passes over it.
func TestRangedIDsSkipOutstanding(t *testing.T) {
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 10, Hi: 14}, "A")
	long := pending(tab, refs["A"]) // 10, outstanding throughout
	require.Equal(t, peer.RequestID(10), long)
	outstanding := map[peer.RequestID]bool{long: true}
	for i := range 20 {
		id := pending(tab, refs["A"])
		require.GreaterOrEqual(t, id, peer.RequestID(10))
		require.Less(t, id, peer.RequestID(14))
		require.False(t, outstanding[id], "step %d: %d issued while outstanding", i, id)
		outstanding[id] = true
		_, _, err := tab.Respond(id, "A", nil)
		require.NoError(t, err)
		delete(outstanding, id)
	}
	f, ended, err := tab.Respond(long, "A", "at last")
	require.NoError(t, err)
	require.True(t, ended)
	require.Equal(t, long, f.ID)
}

// TestRangedStrayResponses: a response to an ID that names no outstanding
// request is classified as with 64-bit IDs while its slot remembers it, late
// once the slot has moved on, and unknown if the ID was never issued.
func TestRangedStrayResponses(t *testing.T) {
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 100, Hi: 1000}, "A", "B")
	answered := pending(tab, refs["A"])
	expired := pendingFor(tab, refs["A"], time.Second)
	open := pending(tab, refs["B"])

	_, _, err := tab.Respond(open, "A", "spoof")
	require.ErrorIs(t, err, receiver.ErrWrongPeer)
	_, ended, err := tab.Respond(answered, "A", "yes")
	require.NoError(t, err)
	require.True(t, ended)
	_, _, err = tab.Respond(answered, "A", "again")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)
	f, _, ended := tab.Expire(time.Second)
	require.True(t, ended)
	require.Equal(t, expired, f.ID, "the finished record carries the ranged ID")
	_, _, err = tab.Respond(expired, "A", "late")
	require.ErrorIs(t, err, receiver.ErrLateResponse)

	for _, id := range []peer.RequestID{0, 99, 1000, 1 << 40, 500} {
		_, _, err = tab.Respond(id, "B", nil)
		require.ErrorIs(t, err, receiver.ErrUnknownRequest, "id %d", id)
	}

	// The freed slots go to new messages: their old IDs become late.
	tab.Notify(refs["A"], 0, time.Hour, Terms{})
	pending(tab, refs["A"])
	for _, id := range []peer.RequestID{answered, expired} {
		_, _, err = tab.Respond(id, "A", nil)
		require.ErrorIs(t, err, receiver.ErrLateResponse, "id %d", id)
	}
	require.Equal(t, 2, tab.Len())
}

// TestRangedRefusal: a refused request's ranged ID, remembered by its free
// slot, answers duplicate; once the slot serves another message, late.
func TestRangedRefusal(t *testing.T) {
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 100, Hi: 1000}, "A")
	id := pending(tab, refs["A"])
	f, ended, err := tab.Refuse(id, "A")
	require.NoError(t, err)
	require.True(t, ended)
	require.Equal(t, id, f.ID)
	require.Equal(t, receiver.Refused, f.Reason)
	_, _, err = tab.Respond(id, "A", "after all")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)
	pending(tab, refs["A"])
	_, _, err = tab.Refuse(id, "A")
	require.ErrorIs(t, err, receiver.ErrLateResponse)
}

// TestRangedIDsHeldBackAndUnsent: the sending state, withdrawal and
// failures work on ranged IDs as on handles.
func TestRangedIDsHeldBackAndUnsent(t *testing.T) {
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 7, Hi: 9}, "A")
	id := tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, nil)
	_, ended, err := tab.Respond(id, "A", "early")
	require.NoError(t, err)
	require.False(t, ended)
	f, ended := tab.Sent(id)
	require.True(t, ended)
	require.Equal(t, "early", f.Response)
	require.Equal(t, id, f.ID)

	id = tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, nil)
	_, ok := tab.Unsend(id)
	require.True(t, ok)
	_, _, err = tab.Respond(id, "A", nil)
	require.ErrorIs(t, err, receiver.ErrUnknownRequest, "the peer never saw it")

	id = pending(tab, refs["A"])
	require.True(t, tab.Withdraw(id))
	require.False(t, tab.Withdraw(id))
	done := tab.FailPeer(refs["A"], nil)
	require.Len(t, done, 1)
	require.Equal(t, id, done[0].ID)
	require.Equal(t, receiver.Disconnected, done[0].Reason)
	require.Nil(t, done[0].Receiver)
}

// TestRangedIDsWhenEveryIDIsRemembered: when every ID of a small range is
// remembered by some free slot, a new request still gets one (the first the
// cursor meets, its slot forgotten); only outstanding IDs are never taken.
func TestRangedIDsWhenEveryIDIsRemembered(t *testing.T) {
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 1, Hi: 3}, "A")
	a := pending(tab, refs["A"])
	b := pending(tab, refs["A"])
	// Two notifications take new slots, so the requests' slots stay free
	// (and remember a and b) once they end.
	tab.Notify(refs["A"], 0, time.Hour, Terms{})
	tab.Notify(refs["A"], 0, time.Hour, Terms{})
	for _, id := range []peer.RequestID{a, b} {
		_, _, err := tab.Respond(id, "A", nil)
		require.NoError(t, err)
	}
	tab.Expire(time.Hour) // the notifications end; their slots are freed last, so reused first
	c := pending(tab, refs["A"])
	require.Equal(t, a, c, "the cursor wrapped to the first remembered ID")
	d := pending(tab, refs["A"])
	require.Equal(t, b, d)
	require.Equal(t, 2, tab.Len())
	require.Panics(t, func() { tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, nil) }, "more requests than IDs")
}

// The quarantine's end: the deadline passed by as long again as the
// timeout, without overflow.
func TestQuarantineEnd(t *testing.T) {
	for _, c := range []struct{ now, timeout, want time.Duration }{
		{0, time.Second, 2 * time.Second},
		{5 * time.Second, time.Second, 7 * time.Second},
		{time.Second, math.MaxInt64 / 2, math.MaxInt64},
		{math.MaxInt64 - 1, 1, math.MaxInt64},
	} {
		require.Equal(t, c.want, quarantineEnd(c.now, c.timeout), "%v after %v", c.timeout, c.now)
	}
}

// TestRangedIDsQuarantineBlocks: the quarantine keeps at most
// quarantineBlocks records, of one ID each in a range that small; in a
// larger range a block's IDs share one record, and a block whose earlier
// requests went to several peers, and may still be answered, is passed
// over for every peer.
func TestRangedIDsQuarantineBlocks(t *testing.T) {
	for _, c := range []struct {
		size              uint64
		blockSize, blocks uint64
	}{
		{2, 1, 2},
		{quarantineBlocks, 1, quarantineBlocks},
		{quarantineBlocks + 1, 2, quarantineBlocks/2 + 1},
		{1<<32 - 1<<24, 1<<18 - 1<<10, quarantineBlocks},
		{math.MaxUint64 - 1, 1 << 50, quarantineBlocks},
	} {
		s := newIDSpace(receiver.IDRange{Lo: 1, Hi: 1 + c.size})
		require.Equal(t, c.blockSize, s.blockSize, "size %d", c.size)
		require.Equal(t, c.blocks, uint64(len(s.blocks)), "size %d", c.size)
	}

	// Blocks of two IDs: 1 and 2 share one.
	size := uint64(2 * quarantineBlocks)
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 1, Hi: 1 + size}, "A", "B", "C")
	issue := func(to peer.ID) peer.RequestID {
		id := tab.Add(nobody, refs[to], 0, time.Second, Terms{}, nil)
		tab.Sent(id)
		_, ended, err := tab.Respond(id, to, nil)
		require.NoError(t, err)
		require.True(t, ended)
		return id
	}
	require.Equal(t, peer.RequestID(1), issue("A"))
	require.Equal(t, peer.RequestID(2), issue("B"))
	for want := peer.RequestID(3); want <= peer.RequestID(size); want++ {
		require.Equal(t, want, issue("C"))
	}
	require.Equal(t, peer.RequestID(3), issue("A"), "1 and 2 went to two peers: their block is passed over; 3 went to C")
	require.Equal(t, peer.RequestID(4), issue("A"), "its block-mate went to C too: what this pass issued from the block does not count until the next")
	require.Zero(t, tab.ReusedEarly())
}

// TestRangedIDsAllocateNothingPerRequest: in steady state the quarantine
// adds no allocation to a request's life with a range of IDs. (The map of
// remembered IDs, whose keys keep changing, costs about one per request of
// its own, as it did before the quarantine.)
func TestRangedIDsQuarantineAllocatesNothing(t *testing.T) {
	if race.Enabled {
		t.Skip("the race detector allocates for its own bookkeeping")
	}
	tab, refs := rangedFixture(t, receiver.IDRange{Lo: 1 << 24, Hi: 1 << 32}, "A", "B")
	now := time.Duration(0)
	step := func() {
		for _, to := range []peer.ID{"A", "B"} {
			id := tab.Add(nobody, refs[to], now, time.Second, Terms{}, nil)
			tab.Sent(id)
			if _, _, err := tab.Respond(id, to, nil); err != nil {
				t.Fatal(err)
			}
		}
		now += time.Millisecond
	}
	for range 1000 {
		step()
	}
	require.LessOrEqual(t, testing.AllocsPerRun(1000, step), 2.0, "two requests a step: the map's one each, and nothing more")
}

package requests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// slowRecorder is a SlowReceiver that does nothing: the table never calls
// receivers, it only hands them back.
type slowRecorder struct{ receiver.Funcs }

func (*slowRecorder) OnSlow(peer.RequestID, peer.ID) {}

// TestSoftDeadline: a request with a soft deadline is reported slow once at
// the soft deadline, stays live, and fails at its hard one; its SentAt is
// its send time throughout.
func TestSoftDeadline(t *testing.T) {
	tab, refs := fixture(t, "A")
	r := &slowRecorder{}
	id := tab.AddSoft(r, refs["A"], 10, 5, 20, Terms{}, nil)
	tab.Sent(id)
	deadline, ok := tab.Next()
	require.True(t, ok)
	require.Equal(t, time.Duration(15), deadline, "armed for the soft deadline first")

	_, _, ok = tab.Expire(14)
	require.False(t, ok)
	f, slow, ok := tab.Expire(15)
	require.True(t, ok)
	require.Zero(t, f, "nothing ended")
	require.Equal(t, id, slow.ID)
	require.Equal(t, receiver.SlowReceiver(r), slow.Receiver)
	require.Equal(t, peer.ID("A"), slow.PeerID)
	require.Equal(t, 1, tab.Len(), "still live")
	require.True(t, tab.StillLive(slow))
	deadline, _ = tab.Next()
	require.Equal(t, time.Duration(30), deadline, "then for the hard one, from the send")
	_, _, ok = tab.Expire(29)
	require.False(t, ok, "reported once")

	f, slow, ok = tab.Expire(30)
	require.True(t, ok)
	require.Zero(t, slow)
	require.Equal(t, receiver.Timeout, f.Reason)
	require.Equal(t, time.Duration(10), f.SentAt, "the send time, not the soft deadline")
	require.False(t, tab.StillLive(slow), "ended")
}

// TestSoftDeadlineAnsweredInTime: a response before the soft deadline ends
// the request with no slow report, and the slot's next request has none.
func TestSoftDeadlineAnsweredInTime(t *testing.T) {
	tab, refs := fixture(t, "A")
	r := &slowRecorder{}
	id := tab.AddSoft(r, refs["A"], 0, 5, 20, Terms{}, nil)
	tab.Sent(id)
	f, ended, err := tab.Respond(id, "A", "ok")
	require.NoError(t, err)
	require.True(t, ended)
	require.Equal(t, time.Duration(0), f.SentAt)
	_, slow, ok := tab.Expire(time.Hour)
	require.False(t, ok)
	require.Zero(t, slow)

	// The slot is reused by a request with one deadline: it times out at it.
	id2 := pendingFor(tab, refs["A"], 7)
	f, slow, ok = tab.Expire(7)
	require.True(t, ok)
	require.Zero(t, slow)
	require.Equal(t, receiver.Timeout, f.Reason)
	require.Equal(t, id2, f.ID)
}

// TestSoftDeadlineAnsweredWhenSlow: a response after the soft deadline and
// before the hard one is accepted, and its SentAt is the send time.
func TestSoftDeadlineAnsweredWhenSlow(t *testing.T) {
	tab, refs := fixture(t, "A")
	r := &slowRecorder{}
	id := tab.AddSoft(r, refs["A"], 100, 5, 20, Terms{}, nil)
	tab.Sent(id)
	_, slow, _ := tab.Expire(105)
	require.Equal(t, id, slow.ID)
	f, ended, err := tab.Respond(id, "A", "late but in time")
	require.NoError(t, err)
	require.True(t, ended)
	require.Equal(t, time.Duration(100), f.SentAt)
	_, _, ok := tab.Expire(time.Hour)
	require.False(t, ok, "the hard deadline went with the request")
}

// TestSoftDeadlineQuietForOtherReceivers: a request withdrawn, or whose
// receiver is not a SlowReceiver, passes its soft deadline silently and
// still fails at its hard one.
func TestSoftDeadlineQuietForOtherReceivers(t *testing.T) {
	tab, refs := fixture(t, "A")
	plain := tab.AddSoft(receiver.Funcs{}, refs["A"], 0, 5, 20, Terms{}, nil)
	tab.Sent(plain)
	withdrawn := tab.AddSoft(&slowRecorder{}, refs["A"], 0, 5, 20, Terms{}, nil)
	tab.Sent(withdrawn)
	require.True(t, tab.Withdraw(withdrawn))
	_, _, ok := tab.Expire(19)
	require.False(t, ok)
	for range 2 {
		f, slow, ok := tab.Expire(20)
		require.True(t, ok)
		require.Zero(t, slow)
		require.Equal(t, receiver.Timeout, f.Reason)
	}
}

// TestSoftDeadlineWhileSending: a soft deadline that passes while the
// request is being sent is held back and reported once by SlowHeld after
// Sent; a request whose send fails is never reported.
func TestSoftDeadlineWhileSending(t *testing.T) {
	tab, refs := fixture(t, "A")
	r := &slowRecorder{}
	id := tab.AddSoft(r, refs["A"], 0, 5, 20, Terms{}, nil)
	_, _, ok := tab.Expire(6)
	require.False(t, ok, "held back while sending")
	_, ended := tab.Sent(id)
	require.False(t, ended)
	slow, ok := tab.SlowHeld(id)
	require.True(t, ok)
	require.Equal(t, id, slow.ID)
	require.Equal(t, receiver.SlowReceiver(r), slow.Receiver)
	require.Equal(t, peer.ID("A"), slow.PeerID)
	_, ok = tab.SlowHeld(id)
	require.False(t, ok, "once")
	f, _, ok := tab.Expire(20)
	require.True(t, ok)
	require.Equal(t, receiver.Timeout, f.Reason)

	failed := tab.AddSoft(r, refs["A"], 30, 5, 20, Terms{}, nil)
	_, _, ok = tab.Expire(40)
	require.False(t, ok)
	_, ok = tab.Unsend(failed)
	require.True(t, ok)
	_, ok = tab.SlowHeld(failed)
	require.False(t, ok)
	_, _, ok = tab.Expire(time.Hour)
	require.False(t, ok, "its hard deadline went with it")
}

// TestSoftDeadlineWithIDRange: the slow report names the request by its ID
// from the range, not its slot's handle.
func TestSoftDeadlineWithIDRange(t *testing.T) {
	tab, refs := fixture(t, "A")
	tab.SetIDRange(receiver.IDRange{Lo: 1000, Hi: 1999})
	id := tab.AddSoft(&slowRecorder{}, refs["A"], 0, 5, 20, Terms{}, nil)
	tab.Sent(id)
	_, slow, ok := tab.Expire(5)
	require.True(t, ok)
	require.Equal(t, id, slow.ID)
	require.GreaterOrEqual(t, uint64(id), uint64(1000))
}

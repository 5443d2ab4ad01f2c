package receiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/peer"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type nopPeer peer.ID

func (p nopPeer) ID() peer.ID          { return peer.ID(p) }
func (nopPeer) Send(uint64, any) error { return nil }

// fixture connects peers in a pool (for real Refs) and registers them.
func fixture(t *testing.T, ids ...peer.ID) (*Table, map[peer.ID]peer.Ref) {
	var pool peer.Pool
	var tab Table
	refs := map[peer.ID]peer.Ref{}
	for _, id := range ids {
		ref, err := pool.Connect(nopPeer(id), id, 1)
		require.NoError(t, err)
		tab.Register(ref, id)
		refs[id] = ref
	}
	return &tab, refs
}

var nobody = Funcs{}

// pending adds a request and marks it sent.
func pending(tab *Table, ref peer.Ref) RequestID {
	id := tab.Add(nobody, ref, 0)
	tab.Sent(id)
	return id
}

func TestIDsAreNonzeroAndNeverRepeatWhileSlotsAreReused(t *testing.T) {
	tab, refs := fixture(t, "A")
	seen := map[RequestID]bool{}
	for range 1000 {
		id := pending(tab, refs["A"])
		require.NotZero(t, id)
		require.False(t, seen[id], "id %d issued twice", id)
		seen[id] = true
		_, ended, err := tab.Respond(id, "A", nil)
		require.NoError(t, err)
		require.True(t, ended)
	}
	require.Zero(t, tab.Len())
}

func TestRespondClassifiesWhatItDrops(t *testing.T) {
	tab, refs := fixture(t, "A", "B")
	answered := pending(tab, refs["A"])
	expired := pending(tab, refs["A"])
	open := pending(tab, refs["B"])

	_, _, err := tab.Respond(open, "A", "spoof")
	require.ErrorIs(t, err, ErrWrongPeer)
	f, ended, err := tab.Respond(answered, "A", "yes")
	require.NoError(t, err)
	require.True(t, ended)
	require.True(t, f.Answered())
	require.Equal(t, "yes", f.Response)
	require.Equal(t, peer.ID("A"), f.PeerID)
	_, _, err = tab.Respond(answered, "A", "again")
	require.ErrorIs(t, err, ErrDuplicateResponse)

	f, ended = tab.Expire(expired)
	require.True(t, ended)
	require.Equal(t, Timeout, f.Reason)
	_, ended = tab.Expire(expired)
	require.False(t, ended, "a deadline ends a request once")
	_, _, err = tab.Respond(expired, "A", "late")
	require.ErrorIs(t, err, ErrLateResponse)

	for _, id := range []RequestID{0, 1 << 40, open + 1<<32, 77} {
		_, _, err = tab.Respond(id, "B", nil)
		require.ErrorIs(t, err, ErrUnknownRequest, "id %d", id)
	}
	require.Equal(t, 1, tab.Len(), "only the open request is left")
}

func TestOutcomesDuringSendingAreHeldBack(t *testing.T) {
	tab, refs := fixture(t, "A")

	// A response that arrives while the host is still sending waits for Sent.
	id := tab.Add(nobody, refs["A"], 5*time.Millisecond)
	tab.Arm(id, 99)
	f, ended, err := tab.Respond(id, "A", "early")
	require.NoError(t, err)
	require.False(t, ended)
	require.Equal(t, uint64(99), f.Deadline, "the caller learns the deadline to disarm")
	_, _, err = tab.Respond(id, "A", "twice")
	require.ErrorIs(t, err, ErrDuplicateResponse)
	f, ended = tab.Sent(id)
	require.True(t, ended)
	require.Equal(t, "early", f.Response)
	require.Equal(t, 5*time.Millisecond, f.SentAt)

	// A failed send drops whatever was held: no receiver is ever called.
	id = tab.Add(nobody, refs["A"], 0)
	_, ended = tab.Expire(id)
	require.False(t, ended)
	f, ok := tab.Unsend(id)
	require.True(t, ok)
	require.Nil(t, f.Receiver)
	_, _, err = tab.Respond(id, "A", "for an unsent request")
	require.ErrorIs(t, err, ErrUnknownRequest)

	// A timeout held back is applied by Sent.
	id = tab.Add(nobody, refs["A"], 0)
	tab.Expire(id)
	f, ended = tab.Sent(id)
	require.True(t, ended)
	require.Equal(t, Timeout, f.Reason)
	require.Zero(t, tab.Len())
}

func TestFailPeerVisitsOnlyThatPeersRequests(t *testing.T) {
	tab, refs := fixture(t, "A", "B")
	var toA []RequestID
	for range 3 {
		toA = append(toA, pending(tab, refs["A"]))
	}
	for range 100 {
		pending(tab, refs["B"])
	}
	sending := tab.Add(nobody, refs["A"], 0)
	tab.Arm(sending, 7)

	done, disarm := tab.FailPeer(refs["A"], nil, nil)
	require.Equal(t, 4, tab.Visited())
	require.Len(t, done, 3)
	for _, f := range done {
		require.Equal(t, Disconnected, f.Reason)
		require.Contains(t, toA, f.ID)
	}
	require.Equal(t, []uint64{7}, disarm, "the request still being sent gives up its deadline")
	f, ended := tab.Sent(sending)
	require.True(t, ended)
	require.Equal(t, Disconnected, f.Reason)
	require.Equal(t, 100, tab.Len())

	done, _ = tab.FailPeer(refs["A"], nil, nil)
	require.Empty(t, done, "a second disconnect finds nothing")
	done = tab.FailAll(nil)
	require.Len(t, done, 100)
	require.Zero(t, tab.Len())
}

func TestWithdrawLeavesTheRequestOutstandingWithoutAReceiver(t *testing.T) {
	tab, refs := fixture(t, "A")
	id := tab.Add(Funcs{Failure: func(RequestID, peer.ID, Reason) {}}, refs["A"], 0)
	tab.Sent(id)
	require.True(t, tab.Withdraw(id))
	require.False(t, tab.Withdraw(id))
	require.Equal(t, 1, tab.Len(), "it keeps its channel until its response or deadline")
	f, ended, err := tab.Respond(id, "A", "ignored")
	require.NoError(t, err)
	require.True(t, ended)
	require.Nil(t, f.Receiver)
	require.False(t, tab.Withdraw(id))
}

func TestReasonNames(t *testing.T) {
	require.Equal(t, "timeout", Timeout.String())
	require.Equal(t, "disconnected", Disconnected.String())
	require.Equal(t, "shutdown", Shutdown.String())
	require.Equal(t, "Reason(9)", Reason(9).String())
}

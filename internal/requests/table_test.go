package requests

import (
	"fmt"
	"reflect"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/internal/peerpool"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type nopPeer peer.ID

func (p nopPeer) ID() peer.ID                  { return peer.ID(p) }
func (nopPeer) Send(peer.RequestID, any) error { return nil }

// fixture connects peers in a pool (for real Refs) and registers them.
func fixture(t *testing.T, ids ...peer.ID) (*Table, map[peer.ID]peerpool.Ref) {
	var pool peerpool.Pool
	var tab Table
	refs := map[peer.ID]peerpool.Ref{}
	for _, id := range ids {
		ref, err := pool.Connect(nopPeer(id), id, 1)
		require.NoError(t, err)
		tab.Register(ref, id)
		refs[id] = ref
	}
	return &tab, refs
}

var nobody = receiver.Funcs{}

// pending adds a request with a long timeout and marks it sent.
func pending(tab *Table, ref peerpool.Ref) peer.RequestID {
	return pendingFor(tab, ref, time.Hour)
}

func pendingFor(tab *Table, ref peerpool.Ref, timeout time.Duration) peer.RequestID {
	id := tab.Add(nobody, ref, 0, timeout, Terms{}, nil)
	tab.Sent(id)
	return id
}

func TestEntrySize(t *testing.T) {
	// With the slab's 24-byte header, a pending request costs 56 bytes.
	require.Equal(t, uintptr(32), unsafe.Sizeof(entry{}))
}

func TestIDsAreNonzeroAndNeverRepeatWhileSlotsAreReused(t *testing.T) {
	tab, refs := fixture(t, "A")
	seen := map[peer.RequestID]bool{}
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
	expired := pendingFor(tab, refs["A"], time.Second)
	open := pending(tab, refs["B"])

	_, _, err := tab.Respond(open, "A", "spoof")
	require.ErrorIs(t, err, receiver.ErrWrongPeer)
	f, ended, err := tab.Respond(answered, "A", "yes")
	require.NoError(t, err)
	require.True(t, ended)
	require.True(t, f.Answered())
	require.Equal(t, "yes", f.Response)
	require.Equal(t, peer.ID("A"), f.PeerID)
	_, _, err = tab.Respond(answered, "A", "again")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)

	f, _, ended = tab.Expire(time.Second)
	require.True(t, ended)
	require.Equal(t, expired, f.ID)
	require.Equal(t, receiver.Timeout, f.Reason)
	_, _, ended = tab.Expire(time.Second)
	require.False(t, ended, "a deadline ends a request once")
	_, _, err = tab.Respond(expired, "A", "late")
	require.ErrorIs(t, err, receiver.ErrLateResponse)

	for _, id := range []peer.RequestID{0, 1 << 40, open + 1<<32, 77} {
		_, _, err = tab.Respond(id, "B", nil)
		require.ErrorIs(t, err, receiver.ErrUnknownRequest, "id %d", id)
	}
	require.Equal(t, 1, tab.Len(), "only the open request is left")
}

// TestRefuseEndsARequestLikeAResponse: a refusal passes the checks a
// response passes, ends the request with reason Refused, and is the peer's
// one answer: a response or refusal after it is a duplicate, in the slot's
// memory too.
func TestRefuseEndsARequestLikeAResponse(t *testing.T) {
	tab, refs := fixture(t, "A", "B")
	refused := pendingFor(tab, refs["A"], time.Hour)
	expired := pendingFor(tab, refs["A"], time.Second)

	_, _, err := tab.Refuse(refused, "B")
	require.ErrorIs(t, err, receiver.ErrWrongPeer)
	_, _, err = tab.Refuse(refused+1<<40, "A")
	require.ErrorIs(t, err, receiver.ErrUnknownRequest)
	f, ended, err := tab.Refuse(refused, "A")
	require.NoError(t, err)
	require.True(t, ended)
	require.Equal(t, receiver.Refused, f.Reason)
	require.False(t, f.Answered())
	require.Equal(t, refused, f.ID)
	require.Equal(t, peer.ID("A"), f.PeerID)
	require.Equal(t, refs["A"], f.Peer, "the caller reopens the channel")
	_, _, err = tab.Refuse(refused, "A")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)
	_, _, err = tab.Respond(refused, "A", "after all")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)

	tab.Expire(time.Second)
	_, _, err = tab.Refuse(expired, "A")
	require.ErrorIs(t, err, receiver.ErrLateResponse)

	// While the host sends, a refusal is held back like a response, and
	// the first of them wins.
	id := tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, nil)
	_, ended, err = tab.Refuse(id, "A")
	require.NoError(t, err)
	require.False(t, ended)
	_, _, err = tab.Respond(id, "A", "too late to change its mind")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)
	f, ended = tab.Sent(id)
	require.True(t, ended)
	require.Equal(t, receiver.Refused, f.Reason)
	require.Nil(t, f.Response)
	require.Zero(t, tab.Len())

	// A refusal of a request whose send then fails is dropped with it.
	id = tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, nil)
	_, _, err = tab.Refuse(id, "A")
	require.NoError(t, err)
	_, ok := tab.Unsend(id)
	require.True(t, ok)
	_, _, err = tab.Refuse(id, "A")
	require.ErrorIs(t, err, receiver.ErrUnknownRequest)
}

func TestOutcomesDuringSendingAreHeldBack(t *testing.T) {
	tab, refs := fixture(t, "A")

	// A response that arrives while the host is still sending waits for Sent.
	id := tab.Add(nobody, refs["A"], 5*time.Millisecond, time.Hour, Terms{}, nil)
	_, ended, err := tab.Respond(id, "A", "early")
	require.NoError(t, err)
	require.False(t, ended)
	_, _, err = tab.Respond(id, "A", "twice")
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)
	f, ended := tab.Sent(id)
	require.True(t, ended)
	require.Equal(t, "early", f.Response)
	require.Equal(t, 5*time.Millisecond, f.SentAt)
	_, ok := tab.Next()
	require.False(t, ok, "the answered request's deadline is gone with it")

	// A failed send drops whatever was held: no receiver is ever called.
	id = tab.Add(nobody, refs["A"], 0, time.Second, Terms{}, nil)
	_, _, ended = tab.Expire(time.Second)
	require.False(t, ended, "a timeout during the send is held back, not reported")
	f, ok = tab.Unsend(id)
	require.True(t, ok)
	require.Nil(t, f.Receiver)
	require.Equal(t, refs["A"], f.Peer, "the caller reopens the channel")
	_, _, err = tab.Respond(id, "A", "for an unsent request")
	require.ErrorIs(t, err, receiver.ErrUnknownRequest)

	// A timeout held back is applied by Sent.
	id = tab.Add(nobody, refs["A"], 0, time.Second, Terms{}, nil)
	tab.Expire(2 * time.Second)
	f, ended = tab.Sent(id)
	require.True(t, ended)
	require.Equal(t, receiver.Timeout, f.Reason)
	require.Zero(t, tab.Len())
}

func TestFailPeerVisitsOnlyThatPeersMessages(t *testing.T) {
	tab, refs := fixture(t, "A", "B")
	var toA []peer.RequestID
	for range 3 {
		toA = append(toA, pending(tab, refs["A"]))
	}
	for range 100 {
		pending(tab, refs["B"])
	}
	sending := tab.Add(nobody, refs["A"], 0, time.Second, Terms{Class: 2}, nil)
	require.True(t, tab.Notify(refs["A"], 0, time.Second, Terms{Class: 3}))

	done := tab.FailPeer(refs["A"], nil)
	require.Equal(t, 5, tab.Visited(), "A's three requests, the one being sent and the notification")
	require.Len(t, done, 4)
	for _, f := range done {
		if f.Notification {
			require.Equal(t, Terms{Class: 3}, f.Terms, "its terms come back to be settled")
			require.Zero(t, f.ID)
			continue
		}
		require.Equal(t, receiver.Disconnected, f.Reason)
		require.Contains(t, toA, f.ID)
	}
	next, _ := tab.Next()
	require.Equal(t, time.Hour, next, "the notification and the request still being sent gave up their deadlines")
	f, ended := tab.Sent(sending)
	require.True(t, ended)
	require.Equal(t, receiver.Disconnected, f.Reason)
	require.Equal(t, Terms{Class: 2}, f.Terms)
	require.Equal(t, peerpool.Ref{}, f.Peer, "its peer is gone: there is no channel to reopen")
	require.Equal(t, 100, tab.Len())

	done = tab.FailPeer(refs["A"], nil)
	require.Empty(t, done, "a second disconnect finds nothing")
	done = tab.FailAll(nil)
	require.Len(t, done, 100)
	require.Zero(t, tab.Len())
}

func TestNotificationsHoldAChannelUntilDigested(t *testing.T) {
	tab, refs := fixture(t, "A")
	tab.Notify(refs["A"], 10, 5, Terms{})
	id := tab.Add(nobody, refs["A"], 10, 5, Terms{}, nil)
	tab.Sent(id)
	require.Equal(t, 1, tab.Len(), "a notification is not a request in flight")

	f, _, ok := tab.Expire(15)
	require.True(t, ok)
	require.True(t, f.Notification, "the notification, armed first, is done first")
	require.False(t, f.Answered())
	require.Nil(t, f.Receiver)
	require.Equal(t, refs["A"], f.Peer)
	require.Zero(t, f.ID)
	f, _, ok = tab.Expire(15)
	require.True(t, ok)
	require.Equal(t, id, f.ID)
	require.Equal(t, receiver.Timeout, f.Reason)

	// Stop: FailAll reports notifications too, so their channels reopen.
	tab.Notify(refs["A"], 20, 5, Terms{})
	pending(tab, refs["A"])
	done := tab.FailAll(nil)
	require.Len(t, done, 2)
	var notifications int
	for _, f := range done {
		if f.Notification {
			notifications++
		} else {
			require.Equal(t, receiver.Shutdown, f.Reason)
		}
	}
	require.Equal(t, 1, notifications)
	_, ok = tab.Next()
	require.False(t, ok)
}

func TestResponsesNamingANotificationSlotAreUnknown(t *testing.T) {
	tab, refs := fixture(t, "A")
	var ids []peer.RequestID
	for range 3 {
		ids = append(ids, pending(tab, refs["A"]))
	}
	// Free the middle slot, let a notification take it, and forge a
	// response to the ID it would have had as a request.
	_, _, err := tab.Respond(ids[1], "A", nil)
	require.NoError(t, err)
	tab.Notify(refs["A"], 0, time.Second, Terms{})
	forged := ids[1] + 1<<32
	_, _, err = tab.Respond(forged, "A", nil)
	require.ErrorIs(t, err, receiver.ErrUnknownRequest)
	_, _, err = tab.Respond(ids[1], "A", nil)
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse, "the slot still remembers the request before")
	tab.Expire(time.Second)
	_, _, err = tab.Respond(forged, "A", nil)
	require.ErrorIs(t, err, receiver.ErrUnknownRequest, "nor once the notification is done")
	_, _, err = tab.Respond(ids[1], "A", nil)
	require.ErrorIs(t, err, receiver.ErrDuplicateResponse)
}

func TestWithdrawLeavesTheRequestOutstandingWithoutAReceiver(t *testing.T) {
	tab, refs := fixture(t, "A")
	id := tab.Add(receiver.Funcs{Failure: func(peer.RequestID, peer.ID, receiver.Reason) {}}, refs["A"], 0, time.Hour, Terms{}, nil)
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

func TestNotifyingAGonePeerHoldsNothing(t *testing.T) {
	var pool peerpool.Pool
	var tab Table
	old, err := pool.Connect(nopPeer("A"), "A", 1)
	require.NoError(t, err)
	tab.Register(old, "A")
	_, err = pool.Disconnect("A")
	require.NoError(t, err)
	tab.FailPeer(old, nil)
	// B takes A's slot; a notification A's sender finished sending after A
	// left must not hold (and later reopen) a channel of B's.
	successor, err := pool.Connect(nopPeer("B"), "B", 1)
	require.NoError(t, err)
	require.Equal(t, old.Slot(), successor.Slot())
	tab.Register(successor, "B")
	require.False(t, tab.Notify(old, 0, time.Second, Terms{}))
	require.False(t, tab.Notify(peerpool.Ref{}, 0, time.Second, Terms{}))
	_, ok := tab.Next()
	require.False(t, ok, "nothing was recorded")
	_, _, ok = tab.Expire(time.Hour)
	require.False(t, ok)
}

func TestExpectedTypeIsTheRequestsOwn(t *testing.T) {
	tab, refs := fixture(t, "A")
	for _, ranged := range []bool{false, true} {
		if ranged {
			tab, refs = fixture(t, "A")
			tab.SetIDRange(receiver.IDRange{Lo: 1, Hi: 1 << 20})
		}
		strict := tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, reflect.TypeFor[string]())
		tab.Sent(strict)
		_, _, err := tab.Respond(strict, "A", 42)
		require.ErrorIs(t, err, receiver.ErrWrongResponseType, "ranged IDs: %v", ranged)
		_, ended, err := tab.Respond(strict, "A", "right")
		require.NoError(t, err)
		require.True(t, ended)

		// The next request takes the freed slot and expects nothing.
		lax := tab.Add(nobody, refs["A"], 0, time.Hour, Terms{}, nil)
		tab.Sent(lax)
		_, ended, err = tab.Respond(lax, "A", 42)
		require.NoError(t, err, "ranged IDs: %v", ranged)
		require.True(t, ended)

		// A soft request expects its type as a plain one does.
		soft := tab.AddSoft(nobody, refs["A"], 0, 5, 20, Terms{}, reflect.TypeFor[error]())
		tab.Sent(soft)
		_, _, err = tab.Respond(soft, "A", "not an error")
		require.ErrorIs(t, err, receiver.ErrWrongResponseType, "ranged IDs: %v", ranged)
		_, ended, err = tab.Respond(soft, "A", receiver.Timeout)
		require.NoError(t, err)
		require.True(t, ended)
	}
}

// TestAnswerIsRespondOrRefuse: Answer, the scheduler's form of Respond and
// Refuse, writes the same finished record into the caller's, and leaves it
// alone when the answer is dropped or held back.
func TestAnswerIsRespondOrRefuse(t *testing.T) {
	for _, refused := range []bool{false, true} {
		t.Run(fmt.Sprintf("refused=%v", refused), func(t *testing.T) {
			byAnswer, refsA := fixture(t, "A", "Z")
			byOld, refsB := fixture(t, "A")
			idA, idB := pending(byAnswer, refsA["A"]), pending(byOld, refsB["A"])
			require.Equal(t, idA, idB)

			// Every field set, so that one Answer does not write shows.
			mark := Finished{ID: 99, Receiver: nobody, Peer: refsA["Z"], PeerID: "untouched", SentAt: 7,
				Response: "old", Reason: receiver.Timeout, Notification: true, Terms: Terms{Class: 3}}
			f := mark
			ended, err := byAnswer.Answer(idA, "B", "r", refused, &f)
			require.ErrorIs(t, err, receiver.ErrWrongPeer)
			require.False(t, ended)
			require.Equal(t, mark, f, "a dropped answer writes nothing")

			ended, err = byAnswer.Answer(idA, "A", "r", refused, &f)
			require.NoError(t, err)
			require.True(t, ended)
			answer := func() (Finished, bool, error) { return byOld.Respond(idB, "A", "r") }
			if refused {
				answer = func() (Finished, bool, error) { return byOld.Refuse(idB, "A") }
			}
			want, wantEnded, err := answer()
			require.NoError(t, err)
			require.True(t, wantEnded)
			require.Equal(t, want, f)

			sending := byAnswer.Add(nobody, refsA["A"], 0, time.Hour, Terms{}, nil)
			f = mark
			ended, err = byAnswer.Answer(sending, "A", "early", refused, &f)
			require.NoError(t, err)
			require.False(t, ended, "held back while the host sends")
			require.Equal(t, mark, f)
		})
	}
}

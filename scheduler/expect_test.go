package scheduler

// Tests of a request's expected response type (offer.Request.Expect): a
// response of another type is refused at Deliver, counted, and leaves the
// request live.

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

type objectsReply struct{ items []string }

type pingReply struct{}

func (pingReply) String() string { return "pong" }

// sendExpecting returns an offer callback that sends one request on the
// first channel, expecting typ, and records its ID.
func sendExpecting(r receiver.Receiver, typ reflect.Type, id *receiver.RequestID) func(offer.Offer) {
	return func(o offer.Offer) {
		got, err := o.Send(0, offer.Request{Message: "get", Receiver: r, Timeout: time.Second, Expect: typ})
		if err == nil {
			*id = got
		}
	}
}

func TestResponseOfTheWrongTypeIsRefusedAndTheRequestStaysLive(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 1)
		var id receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendExpecting(rec, reflect.TypeFor[*objectsReply](), &id)}, 0)
		require.NoError(t, err)
		require.NotZero(t, id)

		for _, wrong := range []any{"text", objectsReply{}, nil, (*pingReply)(nil)} {
			err := w.s.Deliver("A", id, wrong)
			require.ErrorIs(t, err, receiver.ErrWrongResponseType, "%T", wrong)
			require.Equal(t, 1, strings.Count(err.Error(), "peersched: "), err.Error())
		}
		st := w.s.Stats()
		require.Equal(t, uint64(4), st.WrongType)
		require.Equal(t, 1, st.RequestsInFlight, "the request is still live")
		require.Equal(t, 1, st.ChannelsClosed, "and keeps its channel")
		require.Empty(t, rec.of(id), "the receiver heard nothing")

		// Its right response still ends it, once.
		require.NoError(t, w.s.Deliver("A", id, &objectsReply{items: []string{"x"}}))
		require.Equal(t, []string{"response from A: &{[x]}"}, rec.of(id))
		require.ErrorIs(t, w.s.Deliver("A", id, &objectsReply{}), receiver.ErrDuplicateResponse)
		require.ErrorIs(t, w.s.Deliver("A", id, "text"), receiver.ErrDuplicateResponse,
			"an ended request's answers are duplicates, whatever their type")
		st = w.s.Stats()
		require.Equal(t, uint64(4), st.WrongType)
		require.Equal(t, uint64(1), st.Succeeded)
		require.Equal(t, 1, st.ChannelsOpen)
	})
}

// The type is checked after the request's other checks: a wrong peer is a
// wrong peer whatever it sends, and a refusal, which carries no response,
// is not checked.
func TestResponseTypeIsCheckedAfterThePeer(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 1)
		w.connect("B", 1)
		var id receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendExpecting(rec, reflect.TypeFor[objectsReply](), &id)}, 0)
		require.NoError(t, err)
		var asked peer.ID = "A"
		if len(w.peers["B"].sends()) == 1 {
			asked = "B"
		}
		other := map[peer.ID]peer.ID{"A": "B", "B": "A"}[asked]
		require.ErrorIs(t, w.s.Deliver(other, id, "text"), receiver.ErrWrongPeer)
		require.NoError(t, w.s.Refuse(asked, id))
		require.Equal(t, []string{fmt.Sprintf("failure from %s: refused", asked)}, rec.of(id))
		st := w.s.Stats()
		require.Equal(t, uint64(0), st.WrongType)
		require.Equal(t, uint64(1), st.WrongPeer)
	})
}

// An interface type takes every response that implements it.
func TestExpectedInterfaceTypeTakesItsImplementations(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 1)
		var id receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendExpecting(rec, reflect.TypeFor[fmt.Stringer](), &id)}, 0)
		require.NoError(t, err)
		require.ErrorIs(t, w.s.Deliver("A", id, "a string is no Stringer"), receiver.ErrWrongResponseType)
		require.ErrorIs(t, w.s.Deliver("A", id, nil), receiver.ErrWrongResponseType)
		require.NoError(t, w.s.Deliver("A", id, pingReply{}))
		require.Equal(t, []string{"response from A: pong"}, rec.of(id))
	})
}

// A wrong response that comes while the host's Send has not returned is
// refused as well, and the request goes on to its deadline.
func TestWrongTypeDuringTheSendIsRefusedAndTheRequestTimesOut(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		a := w.connect("A", 1)
		var early error
		a.onSend = func(requestID uint64, _ any) {
			early = w.s.Deliver("A", receiver.RequestID(requestID), "text")
		}
		var id receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendExpecting(rec, reflect.TypeFor[objectsReply](), &id)}, 0)
		require.NoError(t, err)
		require.ErrorIs(t, early, receiver.ErrWrongResponseType)
		require.Empty(t, rec.of(id))
		w.advance(time.Second)
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(id))
		st := w.s.Stats()
		require.Equal(t, uint64(1), st.WrongType)
		require.Equal(t, uint64(1), st.TimedOut)
	})
}

// A request that expects nothing takes any response, and a slot reused by
// such a request forgets what its last request expected.
func TestRequestWithoutExpectTakesAnyResponse(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 1)
		var first receiver.RequestID
		_, err := w.s.Schedule(&script{onOffer: sendExpecting(rec, reflect.TypeFor[objectsReply](), &first)}, 0)
		require.NoError(t, err)
		require.NoError(t, w.s.Deliver("A", first, objectsReply{}))
		var ids []receiver.RequestID
		_, err = w.s.Schedule(&script{onOffer: sendFirst(rec, time.Second, &ids)}, 0)
		require.NoError(t, err)
		require.Len(t, ids, 1)
		require.NoError(t, w.s.Deliver("A", ids[0], 42))
		require.Equal(t, []string{"response from A: 42"}, rec.of(ids[0]))
	})
}

package scheduler

// Every error the scheduler returns for bad input, walked: each matches
// its sentinel with errors.Is, and its message names the package that
// made it once, at its start, however many layers wrapped it.

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/limit"
	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// badInput is one error the scheduler returned, and the sentinel it must
// match.
type badInput struct {
	what string
	err  error
	want error
}

// packagePrefixes are the prefixes a message may start with: this module's
// core packages share one, and limit has its own.
var packagePrefixes = []string{"peersched: ", "limit: "}

func TestErrorsNameTheirPackageOnce(t *testing.T) {
	var got []badInput
	note := func(what string, err, want error) { got = append(got, badInput{what, err, want}) }

	// New.
	for _, c := range []struct {
		what string
		cfg  Config
		want error
	}{
		{"negative caps", Config{MaxSenders: -1}, ErrBadConfig},
		{"too many requests", Config{MaxRequests: MaxRequestsLimit + 1}, ErrBadConfig},
		{"bad ID range", Config{RequestIDs: receiver.IDRange{Lo: 5, Hi: 5}}, receiver.ErrBadIDRange},
		{"cap above the ID range", Config{RequestIDs: receiver.IDRange{Lo: 1, Hi: 10}, MaxRequests: 100}, ErrBadConfig},
		{"bad budget", Config{Budget: Budget{Burst: 3}}, ErrBadConfig},
		{"duplicate class", Config{Classes: []limit.Class{{Name: "a", Limit: 1}, {Name: "a", Limit: 1}}}, limit.ErrDuplicateClass},
	} {
		_, err := New(c.cfg)
		note("New: "+c.what, err, c.want)
		note("New: "+c.what, err, ErrBadConfig)
	}

	inBubble(t, Config{MaxSenders: 2, MaxRequests: 2, Classes: []limit.Class{{Name: "bulk", Limit: 5}}}, func(w *world) {
		s := w.s
		// Peers.
		note("Connect nil", s.Connect(nil, 1), peer.ErrNilPeer)
		note("Connect no channel", s.Connect(&hostPeer{id: "Z"}, 0), peer.ErrBadChannels)
		note("Connect too many channels", s.Connect(&hostPeer{id: "Z"}, math.MaxInt32+1), peer.ErrTooManyChannels)
		a := w.connect("A", 1)
		w.connect("B", 1)
		note("Connect twice", s.Connect(&hostPeer{id: "A"}, 1), peer.ErrAlreadyConnected)
		note("ConnectWith bad bounds", s.ConnectWith(&hostPeer{id: "Z"}, peer.Options{Bounds: limit.Bounds{Min: 3, Start: 2, Max: 1}}), limit.ErrBadBounds)
		note("ConnectWith limiter panics", s.ConnectWith(&hostPeer{id: "Z"}, peer.Options{Limiter: &trapLimiter{limit: 1, panicIn: "Limit"}}), ErrLimiterPanicked)
		note("Disconnect unknown", s.Disconnect("Z"), peer.ErrUnknownPeer)

		// Senders.
		_, err := s.Schedule(nil, 0)
		note("Schedule nil", err, offer.ErrNilSender)
		_, err = s.ScheduleWith(&script{}, 0, offer.Options{Class: "none"})
		note("ScheduleWith unknown class", err, limit.ErrUnknownClass)
		_, err = s.ScheduleWith(&script{}, 0, offer.Options{Bytes: -1})
		note("ScheduleWith negative size", err, ErrBadBytes)

		// Sends through an offer. A fails its sends, with an error and
		// then a panic; B takes them.
		rec := newOutcomes()
		var kept offer.Offer
		var ids []peer.RequestID
		a.fail = errRefused
		// A sender that waits, declining, keeps the next offer's size to 1.
		decliner, err := s.Schedule(&script{}, 0)
		require.NoError(t, err)
		_, err = s.Schedule(&script{onOffer: func(o offer.Offer) {
			kept = o
			iA, iB := indexOf(o, "A"), indexOf(o, "B")
			_, err := o.Request(iA, "x", rec, time.Second)
			note("host send error", err, errRefused)
			a.fail, a.panics = nil, "boom"
			_, err = o.Request(iA, "x", rec, time.Second)
			note("host send panic", err, ErrSendPanicked)
			_, err = o.Request(o.Len(), "x", rec, time.Second)
			note("no such channel", err, offer.ErrNoSuchChannel)
			_, err = o.Request(iB, "x", nil, time.Second)
			note("nil receiver", err, receiver.ErrNilReceiver)
			_, err = o.Request(iB, "x", rec, 0)
			note("zero timeout", err, receiver.ErrBadTimeout)
			_, err = o.RequestSoft(iB, "x", rec, time.Second, time.Second)
			note("soft at hard", err, receiver.ErrBadTimeout)
			_, err = o.Send(iB, offer.Request{Message: "x", Receiver: rec, Soft: -1, Timeout: time.Second})
			note("negative soft", err, receiver.ErrBadTimeout)
			note("zero digest", o.Notify(iB, "x", 0), receiver.ErrBadTimeout)
			sendFirst(rec, time.Second, &ids, "B")(o)
			_, err = o.Request(iB, "x", rec, time.Second)
			note("channel used", err, offer.ErrChannelUsed)
			_, err = o.Request(iA, "x", rec, time.Second)
			note("size exceeded", err, offer.ErrSizeExceeded)
		}}, 0)
		require.NoError(t, err)
		require.Len(t, ids, 1)
		_, err = kept.Request(0, "x", rec, time.Second)
		note("expired offer", err, offer.ErrExpired)
		require.True(t, s.WithdrawSender(decliner))

		// The cap on requests in flight (2), and a peer gone under its offer.
		c := w.connect("C", 2)
		_, err = s.Schedule(&script{onOffer: func(o offer.Offer) {
			iC := indexOf(o, "C")
			_, err := o.Request(iC, "x", rec, time.Second)
			require.NoError(t, err)
			_, err = o.Request(indexOf(o, "C")+1, "x", rec, time.Second) // C's second channel, listed after its first
			note("too many requests", err, receiver.ErrTooManyRequests)
		}}, 0)
		require.NoError(t, err)
		require.Len(t, c.sends(), 1)
		gone := &script{}
		gone.onOffer = func(o offer.Offer) {
			require.NoError(t, s.Disconnect("C"))
			_, err := o.Request(indexOf(o, "C"), "x", rec, time.Second)
			note("peer gone", err, offer.ErrPeerGone)
			gone.onOffer = nil // and decline the next offers
		}
		gt, err := s.Schedule(gone, 0)
		require.NoError(t, err)
		require.Equal(t, 1, gone.offerCount())
		require.True(t, s.WithdrawSender(gt))
		require.NoError(t, s.Deliver("B", ids[0], "pong"))
		for range 2 { // MaxSenders
			_, err = s.Schedule(&script{}, 0)
			require.NoError(t, err)
		}
		_, err = s.Schedule(&script{}, 0)
		note("too many senders", err, offer.ErrTooManySenders)

		// Responses.
		note("Deliver unknown", s.Deliver("B", 1<<40, "x"), receiver.ErrUnknownRequest)
		note("Deliver duplicate", s.Deliver("B", ids[0], "x"), receiver.ErrDuplicateResponse)
		note("Refuse duplicate", s.Refuse("B", ids[0]), receiver.ErrDuplicateResponse)

		// Call.
		_, _, err = s.Call(context.Background(), 0, "x", CallOptions{})
		note("Call without a deadline", err, receiver.ErrBadTimeout)

		// Stopped.
		s.Stop()
		note("Connect after Stop", s.Connect(&hostPeer{id: "Y"}, 1), ErrStopped)
		note("Deliver after Stop", s.Deliver("B", ids[0], "x"), ErrStopped)
		_, _, err = s.Call(context.Background(), 0, "x", CallOptions{Timeout: time.Second})
		note("Call after Stop", err, ErrStopped)
	})

	// Late, wrong peer and wrong type, each on a live or ended request.
	inBubble(t, Config{}, func(w *world) {
		w.connect("A", 1)
		w.connect("B", 1)
		rec := newOutcomes()
		var id peer.RequestID
		_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
			id, _ = o.Send(indexOf(o, "A"), offer.Request{Message: "x", Receiver: rec, Timeout: time.Second, Expect: reflectTypeOfObjects})
		}}, 0)
		require.NoError(t, err)
		note("Deliver wrong peer", w.s.Deliver("B", id, objectsReply{}), receiver.ErrWrongPeer)
		note("Refuse wrong peer", w.s.Refuse("B", id), receiver.ErrWrongPeer)
		note("Deliver wrong type", w.s.Deliver("A", id, "text"), receiver.ErrWrongResponseType)
		w.advance(time.Second)
		note("Deliver late", w.s.Deliver("A", id, objectsReply{}), receiver.ErrLateResponse)
	})

	require.Greater(t, len(got), 40)
	for _, g := range got {
		if g.want == nil {
			require.NoError(t, g.err, g.what)
			continue
		}
		require.ErrorIs(t, g.err, g.want, g.what)
		msg := g.err.Error()
		starts := false
		for _, p := range packagePrefixes {
			starts = starts || strings.HasPrefix(msg, p)
			require.LessOrEqual(t, strings.Count(msg, p), 1, "%s: %q names %q twice", g.what, msg, p)
		}
		require.True(t, starts, "%s: %q does not start with its package", g.what, msg)
		t.Logf("%-28s %s", g.what, msg)
	}
}

var reflectTypeOfObjects = reflect.TypeFor[objectsReply]()

package scheduler

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/offer"
	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/receiver"
)

// Misbehaving callers and hosts: each case misbehaves once, then checks that
// the scheduler counted it in Stats, logged it, kept every peer's channels
// balanced, and still works (or, if the case stopped it, refuses new work
// cleanly, having ended everything exactly once).
func TestMisbehavingCallersAndHosts(t *testing.T) {
	panicLogged := func(in string) wantLog {
		return wantLog{slog.LevelError, "peersched: recovered a panic in user code", map[string]string{"in": in}}
	}
	for _, tc := range []struct {
		name    string
		do      func(t *testing.T, w *world)
		counted func(st Stats) uint64 // must be 1 afterwards (0 means not counted)
		log     wantLog
		stops   bool
	}{
		{
			name: "a sender panics before sending: it keeps its place",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				snd := &script{onOffer: func(offer.Offer) { panic("sender exploded") }}
				_, err := w.s.Schedule(snd, 0)
				require.NoError(t, err)
				require.Equal(t, 1, snd.offerCount())
				require.Equal(t, 1, w.s.Stats().SendersWaiting)
			},
			counted: func(st Stats) uint64 { return st.PanicsHandled },
			log:     panicLogged("Sender.OnOffer"),
		},
		{
			name: "a sender panics after sending: its send counts",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				_, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) {
					_, err := o.Request(0, "x", newOutcomes(), time.Second)
					require.NoError(t, err)
					panic("sender exploded")
				}}, 0)
				require.NoError(t, err)
				st := w.s.Stats()
				require.Zero(t, st.SendersWaiting)
				require.Equal(t, 1, st.RequestsInFlight)
			},
			counted: func(st Stats) uint64 { return st.PanicsHandled },
			log:     panicLogged("Sender.OnOffer"),
		},
		{
			name: "a receiver panics on its response",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				id := requestOn(t, w, receiver.Funcs{Response: func(receiver.RequestID, peer.ID, any) { panic("receiver exploded") }})
				require.NoError(t, w.s.Deliver("A", id, "ok"))
			},
			counted: func(st Stats) uint64 { return st.PanicsHandled },
			log:     panicLogged("Receiver.OnResponse"),
		},
		{
			name: "a receiver panics on its failure",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				requestOn(t, w, receiver.Funcs{Failure: func(receiver.RequestID, peer.ID, receiver.Reason) { panic("failure exploded") }})
				w.advance(time.Second)
				require.Equal(t, uint64(1), w.s.Stats().TimedOut)
			},
			counted: func(st Stats) uint64 { return st.PanicsHandled },
			log:     panicLogged("Receiver.OnFailure"),
		},
		{
			name: "a discarded sender panics",
			do: func(t *testing.T, w *world) {
				_, err := w.s.Schedule(&script{onDiscard: func() { panic("discard exploded") }}, 0)
				require.NoError(t, err)
				w.s.Stop()
			},
			counted: func(st Stats) uint64 { return st.PanicsHandled },
			log:     panicLogged("Sender.OnDiscard"),
			stops:   true,
		},
		{
			name: "the host refuses a send",
			do: func(t *testing.T, w *world) {
				a := w.connect("A", 1)
				a.fail = errRefused
				var sendErr error
				snd := &script{onOffer: func(o offer.Offer) { _, sendErr = o.Request(0, "x", newOutcomes(), time.Second) }}
				tk, err := w.s.Schedule(snd, 0)
				require.NoError(t, err)
				require.ErrorIs(t, sendErr, errRefused)
				require.Equal(t, 1, w.usage("A").Open, "the channel stays open")
				require.True(t, w.s.WithdrawSender(tk), "the sender sent nothing: it still waits")
				a.fail = nil
			},
			counted: func(st Stats) uint64 { return st.SendErrors },
			log:     wantLog{slog.LevelWarn, "peersched: host send failed", map[string]string{"peer": "A", "error": "peersched: send to \"A\": host refused the message"}},
		},
		{
			name: "the host panics in a send",
			do: func(t *testing.T, w *world) {
				a := w.connect("A", 1)
				a.panics = "host exploded"
				var sendErr error
				tk, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) { sendErr = o.Notify(0, "x", time.Second) }}, 0)
				require.NoError(t, err)
				require.ErrorIs(t, sendErr, ErrSendPanicked)
				require.Equal(t, 1, w.usage("A").Open, "the channel stays open")
				require.True(t, w.s.WithdrawSender(tk))
				a.panics = nil
				require.Equal(t, uint64(1), w.s.Stats().SendErrors)
			},
			counted: func(st Stats) uint64 { return st.PanicsHandled },
			log:     panicLogged("peer send"),
		},
		{
			name: "the host hands back a response to a request it never sent",
			do: func(t *testing.T, w *world) {
				a := w.connect("A", 2)
				a.fail = errRefused
				var refusedID uint64
				a.onSend = func(id uint64, _ any) { refusedID = id }
				tk, err := w.s.Schedule(&script{onOffer: func(o offer.Offer) { _, _ = o.Request(0, "x", newOutcomes(), time.Second) }}, 0)
				require.NoError(t, err)
				require.True(t, w.s.WithdrawSender(tk))
				a.fail, a.onSend = nil, nil
				require.NotZero(t, refusedID)
				// The ID of a send the host refused, the ID a notification
				// carries, and IDs never issued.
				for _, id := range []receiver.RequestID{receiver.RequestID(refusedID), 0, 1 << 40, receiver.RequestID(refusedID) + 1<<32} {
					require.ErrorIs(t, w.s.Deliver("A", id, "forged"), receiver.ErrUnknownRequest)
				}
				require.Equal(t, uint64(4), w.s.Stats().Unknown)
				require.Equal(t, 2, w.usage("A").Open, "nothing was disturbed")
			},
			counted: func(st Stats) uint64 { return min(st.Unknown, 1) },
			log:     wantLog{slog.LevelWarn, "peersched: dropped a response", map[string]string{"from": "A", "reason": receiver.ErrUnknownRequest.Error()}},
		},
		{
			name: "a peer answers a request sent to another",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				rec := newOutcomes()
				id := requestOn(t, w, rec)
				w.connect("B", 1)
				require.ErrorIs(t, w.s.Deliver("B", id, "spoof"), receiver.ErrWrongPeer)
				require.Zero(t, rec.total())
				require.NoError(t, w.s.Deliver("A", id, "real"))
				require.Equal(t, []string{"response from A: real"}, rec.of(id))
			},
			counted: func(st Stats) uint64 { return st.WrongPeer },
			log:     wantLog{slog.LevelWarn, "peersched: dropped a response", map[string]string{"from": "B", "reason": receiver.ErrWrongPeer.Error()}},
		},
		{
			name: "a peer answers after the deadline",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				id := requestOn(t, w, newOutcomes())
				w.advance(time.Second)
				require.ErrorIs(t, w.s.Deliver("A", id, "late"), receiver.ErrLateResponse)
			},
			counted: func(st Stats) uint64 { return st.Late },
			log:     wantLog{slog.LevelDebug, "peersched: dropped a response", map[string]string{"from": "A", "reason": receiver.ErrLateResponse.Error()}},
		},
		{
			name: "a peer answers twice",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				id := requestOn(t, w, newOutcomes())
				require.NoError(t, w.s.Deliver("A", id, "once"))
				require.ErrorIs(t, w.s.Deliver("A", id, "twice"), receiver.ErrDuplicateResponse)
			},
			counted: func(st Stats) uint64 { return st.Duplicate },
			log:     wantLog{slog.LevelDebug, "peersched: dropped a response", map[string]string{"from": "A", "reason": receiver.ErrDuplicateResponse.Error()}},
		},
		{
			name: "a peer refuses a request sent to another",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				w.connect("B", 1)
				rec := newOutcomes()
				id := requestOn(t, w, rec, "A")
				require.ErrorIs(t, w.s.Refuse("B", id), receiver.ErrWrongPeer)
				require.Zero(t, rec.total())
				require.NoError(t, w.s.Refuse("A", id))
				require.Equal(t, []string{"failure from A: refused"}, rec.of(id))
			},
			counted: func(st Stats) uint64 { return st.WrongPeer },
			log:     wantLog{slog.LevelWarn, "peersched: dropped a refusal", map[string]string{"from": "B", "reason": receiver.ErrWrongPeer.Error()}},
		},
		{
			name: "a peer refuses a request it answered",
			do: func(t *testing.T, w *world) {
				w.connect("A", 1)
				rec := newOutcomes()
				id := requestOn(t, w, rec)
				require.NoError(t, w.s.Deliver("A", id, "once"))
				require.ErrorIs(t, w.s.Refuse("A", id), receiver.ErrDuplicateResponse)
				require.Equal(t, []string{"response from A: once"}, rec.of(id))
			},
			counted: func(st Stats) uint64 { return st.Duplicate },
			log:     wantLog{slog.LevelDebug, "peersched: dropped a refusal", map[string]string{"from": "A", "reason": receiver.ErrDuplicateResponse.Error()}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &recordingHandler{}
			inBubble(t, Config{Logger: h.logger()}, func(w *world) {
				tc.do(t, w)
				w.checkChannels()
				if tc.counted != nil {
					require.Equal(t, uint64(1), tc.counted(w.s.Stats()), "counted in Stats")
				}
				requireLogged(t, h, tc.log)
				if tc.stops {
					requireStoppedCleanly(t, w)
				} else {
					requireUsable(t, w)
				}
			})
		})
	}
}

// Callbacks that call every public method from inside themselves, Stop and
// Disconnect included: nothing deadlocks, every nested call takes effect
// before the outermost call returns, and in the end every sender has left
// once and every request has had one outcome.
func TestCallbacksCallEveryMethod(t *testing.T) {
	all := func(withdrawReceiver bool, deliver, refuse string) []string {
		return []string{"connect C: ok", "schedule: ok", "withdraw sender: true",
			fmt.Sprintf("withdraw receiver: %v", withdrawReceiver), "deliver: " + deliver, "refuse: " + refuse,
			"disconnect B: ok", "stop returned"}
	}
	for _, tc := range []struct {
		from     string
		calls    []string // what the nested calls returned
		victim   string   // the outcome of a request pending on B
		discards int      // of the senders waiting, or scheduled, when the callback ran
	}{
		// From its offer, the request just sent is pending: withdrawn, then
		// answered silently, and a refusal after the answer is a duplicate.
		{"Sender.OnOffer", all(true, "ok", "duplicate"), "failure from B: disconnected", 1},
		// From its receiver, the request has ended: too late to withdraw,
		// and a second answer is a duplicate (or late).
		{"Receiver.OnResponse", all(false, "duplicate", "duplicate"), "failure from B: disconnected", 1},
		{"Receiver.OnFailure", all(false, "late", "late"), "failure from B: timeout", 1},
		// From a discard, the scheduler is stopping: everything is refused.
		{"Sender.OnDiscard", []string{"connect C: stopped", "schedule: stopped", "withdraw sender: false",
			"withdraw receiver: false", "deliver: stopped", "refuse: stopped", "disconnect B: stopped", "stop returned"},
			"failure from B: shutdown", 2},
		// From the host's send, the request is being sent: withdrawn, and
		// its early answer accepted silently.
		{"Peer.Send", all(true, "ok", "duplicate"), "failure from B: disconnected", 1},
	} {
		from := tc.from
		t.Run(from, func(t *testing.T) {
			h := &recordingHandler{}
			inBubble(t, Config{Logger: h.logger()}, func(w *world) {
				a := w.connect("A", 2)
				w.connect("B", 1)
				rec := newOutcomes()
				victim := requestOn(t, w, rec, "B") // pending on B
				waiting := &script{}
				waitingTicket, err := w.s.Schedule(waiting, -1) // offered the channel that remains, declines
				require.NoError(t, err)

				var calls []string
				var nested []*script
				callAll := func(id receiver.RequestID) {
					note := func(what string, err error) { calls = append(calls, fmt.Sprintf("%s: %s", what, errClass(err))) }
					note("connect C", w.s.Connect(&hostPeer{id: "C"}, 1))
					snd := &script{}
					nested = append(nested, snd)
					_, err := w.s.Schedule(snd, 0)
					note("schedule", err)
					calls = append(calls, fmt.Sprintf("withdraw sender: %v", w.s.WithdrawSender(waitingTicket)))
					calls = append(calls, fmt.Sprintf("withdraw receiver: %v", w.s.WithdrawReceiver(id)))
					note("deliver", w.s.Deliver("A", id, "nested"))
					note("refuse", w.s.Refuse("A", id))
					_ = w.s.Stats()
					_ = w.s.PeerUsage(nil)
					note("disconnect B", w.s.Disconnect("B"))
					w.s.Stop()
					calls = append(calls, "stop returned")
				}

				var id receiver.RequestID
				rcv := newOutcomes()
				trigger := &script{name: "trigger"}
				switch from {
				case "Sender.OnOffer":
					trigger.onOffer = func(o offer.Offer) {
						var err error
						id, err = o.Request(0, "x", rcv, time.Second)
						require.NoError(t, err)
						callAll(id)
					}
				case "Receiver.OnResponse", "Receiver.OnFailure":
					trigger.onOffer = func(o offer.Offer) {
						var err error
						id, err = o.Request(0, "x", receiver.Funcs{
							Response: func(id receiver.RequestID, _ peer.ID, _ any) { callAll(id) },
							Failure:  func(id receiver.RequestID, _ peer.ID, _ receiver.Reason) { callAll(id) },
						}, time.Second)
						require.NoError(t, err)
					}
				case "Sender.OnDiscard":
					trigger.onDiscard = func() { callAll(id) }
				case "Peer.Send":
					a.onSend = func(reqID uint64, _ any) {
						a.onSend = nil
						id = receiver.RequestID(reqID)
						callAll(id)
					}
					trigger.onOffer = func(o offer.Offer) {
						_, err := o.Request(0, "x", rcv, time.Second)
						require.NoError(t, err)
					}
				}
				_, err = w.s.Schedule(trigger, 1)
				require.NoError(t, err)
				switch from {
				case "Receiver.OnResponse":
					require.NoError(t, w.s.Deliver("A", id, "go"))
				case "Receiver.OnFailure":
					w.advance(time.Second)
				case "Sender.OnDiscard":
					// The trigger declines (it has no onOffer) and waits.
					w.s.Stop()
				}

				// Every nested call happened, in order, before the outermost
				// call returned, and the nested Stop took effect.
				require.Equal(t, tc.calls, calls)
				requireStoppedCleanly(t, w)
				// One exit per sender, one outcome per request.
				require.Equal(t, []string{tc.victim}, rec.of(victim))
				require.Zero(t, rcv.total(), "withdrawn from inside, or not the receiver that ran")
				discards := waiting.discards + trigger.discards
				for _, snd := range nested {
					discards += snd.discards
					require.Zero(t, snd.offerCount(), "stopped before its turn")
				}
				require.Equal(t, tc.discards, discards)
				require.Zero(t, h.count("peersched: recovered a panic in user code"))
			})
		})
	}
}

// A response that comes exactly at its request's deadline is late, even when
// the scheduler's timer for that deadline has not run yet: Deliver enforces
// every deadline that has passed before it looks at the response.
func TestResponseAtTheDeadlineBeforeTheTimerRunsIsLate(t *testing.T) {
	inBubble(t, Config{}, func(w *world) {
		rec := newOutcomes()
		w.connect("A", 1)
		// The mock fires timers due at the same instant in the order they
		// were made: this one, made before the scheduler's first deadline
		// timer, fires first.
		var id receiver.RequestID
		var err error
		w.clock.AfterFunc(time.Second, func() { err = w.s.Deliver("A", id, "at the deadline") })
		id = requestOn(t, w, rec)
		w.advance(time.Second)
		require.ErrorIs(t, err, receiver.ErrLateResponse)
		require.Equal(t, []string{"failure from A: timeout"}, rec.of(id))
	})
}

// requestOn schedules a sender that sends one request with r and a timeout
// of one second, on a channel of peer to (any, if not given), and returns
// its ID.
func requestOn(t *testing.T, w *world, r receiver.Receiver, to ...peer.ID) receiver.RequestID {
	t.Helper()
	var ids []receiver.RequestID
	_, err := w.s.Schedule(&script{onOffer: sendFirst(r, time.Second, &ids, to...)}, 0)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	return ids[0]
}

type wantLog struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func requireLogged(t *testing.T, h *recordingHandler, want wantLog) {
	t.Helper()
	var seen []string
	for _, r := range h.all() {
		ok := r.level == want.level && r.msg == want.msg
		for k, v := range want.attrs {
			ok = ok && r.attrs[k] == v
		}
		if ok {
			if r.level == slog.LevelError {
				require.Contains(t, r.attrs["stack"], "goroutine", "a panic is logged with its stack")
			}
			return
		}
		seen = append(seen, fmt.Sprintf("%v %q %v", r.level, r.msg, r.attrs))
	}
	t.Fatalf("no %v record %q with %v; logged:\n%s", want.level, want.msg, want.attrs, strings.Join(seen, "\n"))
}

// requireUsable checks that a fresh peer and sender still make a round trip.
func requireUsable(t *testing.T, w *world) {
	t.Helper()
	w.connect("fresh", 1)
	rec := newOutcomes()
	id := requestOn(t, w, rec, "fresh")
	require.NoError(t, w.s.Deliver("fresh", id, "still works"))
	require.Equal(t, []string{"response from fresh: still works"}, rec.of(id))
	w.checkChannels()
}

// requireStoppedCleanly checks that a stopped scheduler has ended everything
// and refuses new work.
func requireStoppedCleanly(t *testing.T, w *world) {
	t.Helper()
	st := w.s.Stats()
	require.True(t, st.Stopped)
	require.Zero(t, st.SendersWaiting)
	require.Zero(t, st.RequestsInFlight)
	require.Zero(t, st.ChannelsClosed)
	require.Equal(t, st.Sent, st.Succeeded+st.TimedOut+st.Disconnected+st.ShutDown+st.WithdrawnDone)
	_, err := w.s.Schedule(&script{}, 0)
	require.ErrorIs(t, err, ErrStopped)
	require.ErrorIs(t, w.s.Connect(&hostPeer{id: "late"}, 1), ErrStopped)
	w.checkChannels()
}

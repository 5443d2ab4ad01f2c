package offerqueue

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
)

// While every sender of a level is ready, as when no sender has wants and
// none is parked or held, the level keeps no ready heap: its list is the
// order. The heap appears when a sender stops being ready and goes once
// every sender is ready again, and offers keep queue order throughout.
func TestReadyHeapIsKeptOnlyWhileASenderIsNotReady(t *testing.T) {
	var q Queue
	var tickets []Ticket
	for _, name := range []string{"a", "b", "c", "d"} {
		tickets = append(tickets, q.Push(named(name), 0))
	}
	lv := &q.levels[0]
	require.False(t, lv.heaped)
	require.Empty(t, lv.ready)

	got, _, ok := q.Next(nil, someOpen)
	require.True(t, ok)
	require.Equal(t, tickets[0], got)
	q.Decline(got) // parked
	require.True(t, lv.heaped, "a parked sender needs the heap")
	require.Equal(t, 3, len(lv.ready))

	got, _, _ = q.Next(nil, someOpen)
	require.Equal(t, tickets[1], got, "b is first of the ready")
	require.True(t, q.Reoffer(tickets[0], false))
	require.False(t, lv.heaped, "every sender is ready again")
	got, _, _ = q.Next(nil, someOpen)
	require.Equal(t, tickets[0], got, "a is back in its place")

	q.Hold(tickets[1])
	require.True(t, lv.heaped)
	_, ok = q.Remove(tickets[1])
	require.True(t, ok)
	require.False(t, lv.heaped, "the held sender left")
	require.Equal(t, []string{"a", "c", "d"}, order(&q))
}

// The queue offers in the same order whether or not a level keeps its
// heap: a random run of pushes, parks, holds, wants, reoffers, openings and
// removals against a plain list of the waiting senders in arrival order.
func TestQueueOrderWithAndWithoutTheReadyHeap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var q Queue
		type waiting struct {
			t     Ticket
			state nodeState
			want  peer.ID
		}
		var ws []*waiting // in arrival order
		open := channels{"x": 1, "y": 1}
		for range 400 {
			switch op := rng.IntN(6); {
			case op == 0 || len(ws) == 0:
				w := &waiting{t: q.Push(named("s"), 0)}
				if rng.IntN(4) == 0 {
					w.want = "z" // never open: set aside when its turn comes
					q.SetWants(w.t, []peer.ID{w.want}, nil, 1)
				}
				ws = append(ws, w)
			case op == 1:
				i := rng.IntN(len(ws))
				_, ok := q.Remove(ws[i].t)
				require.True(t, ok)
				ws = slices.Delete(ws, i, i+1)
			case op == 2:
				w := ws[rng.IntN(len(ws))]
				if w.state == ready {
					q.Hold(w.t)
					w.state = held
				}
			case op == 3:
				w := ws[rng.IntN(len(ws))]
				if w.state == held || w.state == parked {
					if w.state == held {
						q.Decline(w.t)
					}
					q.Reoffer(w.t, false)
					w.state = ready
				}
			default:
				var want Ticket
				for _, w := range ws {
					if w.state == ready && w.want == "" {
						want = w.t
						break
					}
				}
				got, _, ok := q.Next(nil, open)
				require.Equal(t, want != 0, ok, "seed %d", seed)
				require.Equal(t, want, got, "seed %d: the first ready sender without unmet wants", seed)
				for _, w := range ws {
					if w.t == want {
						break
					}
					if w.state == ready && w.want != "" {
						w.state = setAside // Next set aside those it passed
					}
				}
				if ok && rng.IntN(2) == 0 {
					q.Decline(got)
					for _, w := range ws {
						if w.t == got {
							w.state = parked
						}
					}
				}
			}
			notReady := 0
			for _, w := range ws {
				if w.state != ready {
					notReady++
				}
			}
			if len(q.levels) == 1 {
				require.Equal(t, int32(notReady), q.levels[0].notReady, "seed %d", seed)
				if notReady == 0 {
					require.False(t, q.levels[0].heaped, "seed %d: no heap while all are ready", seed)
				}
			}
		}
	}
}

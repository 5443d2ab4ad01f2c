package offerqueue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/peer"
)

// streams makes offers from a queue in which every level in prios always has
// a sender waiting: the sender offered leaves (it sent) and another of its
// priority joins at the back. It returns the priority of each offer's sender.
func streams(k int, prios []int, offers int) []int {
	var q Queue
	q.SetPassOverLimit(k)
	for _, p := range prios {
		q.Push(named(fmt.Sprint(p)), p)
	}
	var got []int
	for range offers {
		t, s, ok := q.Next(nil, someOpen)
		if !ok {
			break
		}
		q.Offered(t)
		q.Remove(t)
		var p int
		fmt.Sscan(string(s.(named)), &p)
		got = append(got, p)
		q.Push(s, p)
	}
	return got
}

func join(ps []int) string {
	var b strings.Builder
	for _, p := range ps {
		fmt.Fprint(&b, p)
	}
	return b.String()
}

func TestPassOverOrder(t *testing.T) {
	for _, c := range []struct {
		name  string
		k     int
		prios []int
		want  string
	}{
		{"strict: the low level waits for ever", 0, []int{1, 0}, "1111111111"},
		{"negative is strict too", -3, []int{1, 0}, "1111111111"},
		{"k 3: the low level's turn after three", 3, []int{1, 0}, "1110111011"},
		{"k 1: alternate", 1, []int{1, 0}, "1010101010"},
		// Three levels, k 2: the middle starves after two offers to the
		// top, the bottom after two to the levels above it; the higher
		// starving level goes first.
		{"k 2, three levels", 2, []int{2, 1, 0}, "2210221022"},
		{"one level: nothing to pass over", 2, []int{5}, "5555555555"},
	} {
		require.Equal(t, c.want, join(streams(c.k, c.prios, 10)), c.name)
	}
}

// TestPassOverBounds checks SetPassOverLimit's two bounds over long runs:
// every level is offered a channel within k + 2n − 1 offers of its last, and
// the highest level keeps at least k/(k+n−1) of the offers.
func TestPassOverBounds(t *testing.T) {
	for k := 1; k <= 8; k++ {
		for n := 2; n <= 5; n++ {
			prios := make([]int, n)
			for i := range prios {
				prios[i] = n - i
			}
			const offers = 10_000
			got := streams(k, prios, offers)
			last := map[int]int{}
			top := 0
			for i, p := range got {
				if gap := i - last[p]; gap > k+2*n-1 {
					t.Fatalf("k %d, %d levels: level %d waited %d offers, more than k + 2n − 1 = %d", k, n, p, gap, k+2*n-1)
				}
				last[p] = i
				if p == n {
					top++
				}
			}
			share, bound := float64(top)/offers, float64(k)/float64(k+n-1)
			require.GreaterOrEqual(t, share, bound-1e-3, "k %d, %d levels: the highest level's share", k, n)
		}
	}
}

// TestPassOverWaitsForAnOfferableSender: a starving level whose senders are
// all parked stays starving, and takes the first offer after a Reoffer
// makes one of them offerable again, ahead of the higher level; so does a
// level whose senders were set aside for their wants, once a channel they
// want opens.
func TestPassOverWaitsForAnOfferableSender(t *testing.T) {
	t.Run("parked", func(t *testing.T) {
		var q Queue
		q.SetPassOverLimit(2)
		low := q.Push(named("low"), 0)
		q.Decline(low)
		for range 5 {
			hi := q.Push(named("high"), 1)
			got, s, ok := q.Next(nil, someOpen)
			require.True(t, ok)
			require.Equal(t, hi, got, "low is parked: %v goes first", s)
			q.Offered(got)
			q.Remove(got)
		}
		q.Push(named("high"), 1)
		require.True(t, q.Reoffer(low, false))
		got, _, ok := q.Next(nil, someOpen)
		require.True(t, ok)
		require.Equal(t, low, got, "after five pass-overs, low goes first once it may be offered again")
	})
	t.Run("set aside", func(t *testing.T) {
		var q Queue
		q.SetPassOverLimit(2)
		low := q.Push(named("low"), 0)
		q.SetWants(low, []peer.ID{"B"}, nil, 0)
		open := channels{"A": 1}
		for range 5 {
			hi := q.Push(named("high"), 1)
			got, s, ok := q.Next(nil, open)
			require.True(t, ok)
			require.Equal(t, hi, got, "low wants B, which is closed: %v goes first", s)
			q.Offered(got)
			q.Remove(got)
		}
		q.Push(named("high"), 1)
		open["B"] = 1
		q.Opened("B")
		got, _, ok := q.Next(nil, open)
		require.True(t, ok)
		require.Equal(t, low, got, "after five pass-overs, low goes first once B opens")
	})
}

// TestPassOverForgetsAnEmptiedLevel: a level that empties loses its count;
// a sender arriving at its priority starts a new one.
func TestPassOverForgetsAnEmptiedLevel(t *testing.T) {
	var q Queue
	q.SetPassOverLimit(2)
	low := q.Push(named("low"), 0)
	for range 2 {
		hi := q.Push(named("high"), 1)
		q.Offered(hi)
		q.Remove(hi)
	}
	q.Remove(low)
	low = q.Push(named("low"), 0)
	hi := q.Push(named("high"), 1)
	got, _, _ := q.Next(nil, someOpen)
	require.Equal(t, hi, got, "the new low level has not been passed over yet")
	_ = low
}

// TestPassOverRandomised drives queues with random pushes, removals,
// declines (which park), reoffers, wants and openings, and checks the bound
// on a level's wait against a direct count: a level is passed over fewer
// than k + 2n − 1 times in a row while it has a sender that may be offered
// channels, parked and set-aside senders around it notwithstanding.
func TestPassOverRandomised(t *testing.T) {
	peers := []peer.ID{"A", "B", "C"}
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 1))
		k, n := 1+rng.IntN(4), 1+rng.IntN(4)
		var q Queue
		q.SetPassOverLimit(k)
		var tickets []Ticket
		waited := map[int]int{} // offers since the level's last, while it had an offerable sender
		open := channels{"A": 1}
		for range 400 {
			switch r := rng.IntN(12); {
			case r < 4:
				p := rng.IntN(n)
				tk := q.Push(named(fmt.Sprint(p)), p)
				if rng.IntN(3) == 0 { // wants one of the peers, or avoids one
					id := peers[rng.IntN(len(peers))]
					if rng.IntN(2) == 0 {
						q.SetWants(tk, []peer.ID{id}, nil, 0)
					} else {
						q.SetWants(tk, nil, []peer.ID{id}, 0)
					}
				}
				tickets = append(tickets, tk)
			case r < 5 && len(tickets) > 0:
				i := rng.IntN(len(tickets))
				if s, ok := q.Remove(tickets[i]); ok {
					var p int
					fmt.Sscan(string(s.(named)), &p)
					if !levelWaiting(&q, p) {
						delete(waited, p)
					}
				}
				tickets = append(tickets[:i], tickets[i+1:]...)
			case r < 6 && len(tickets) > 0:
				q.Reoffer(tickets[rng.IntN(len(tickets))], false)
			case r < 7: // a peer's channel opens, or one closes
				id := peers[rng.IntN(len(peers))]
				if rng.IntN(2) == 0 {
					open[id]++
					q.Opened(id)
				} else if open[id] > 0 {
					open[id]--
				}
			default:
				offerable := offerableLevels(&q, open)
				tk, s, ok := q.Next(nil, open)
				if !ok {
					require.Empty(t, offerable, "seed %d: Next found none", seed)
					continue
				}
				var p int
				fmt.Sscan(string(s.(named)), &p)
				require.True(t, offerable[p], "seed %d: offered a sender of level %d, which has none that may be", seed, p)
				q.Offered(tk)
				q.Decline(tk)
				for lv := range offerable {
					if lv == p {
						waited[lv] = 0
						continue
					}
					waited[lv]++
					if waited[lv] >= k+2*n-1 {
						t.Fatalf("seed %d: level %d passed over %d times in a row with k %d", seed, lv, waited[lv], k)
					}
				}
			}
		}
	}
}

func levelWaiting(q *Queue, p int) bool {
	for _, lv := range q.levels {
		if lv.priority == p {
			return true
		}
	}
	return false
}

// offerableLevels returns the priorities with a sender Next could offer to,
// found the slow way: every sender of the level, in its list, that is
// neither parked nor held and whose wants the open channels meet (a sender
// set aside has unmet wants, which this checks again).
func offerableLevels(q *Queue, open Channels) map[int]bool {
	out := map[int]bool{}
	for _, lv := range q.levels {
		for slot := lv.head; slot >= 0; slot = q.nodes[slot].next {
			node := &q.nodes[slot]
			if node.state == parked || node.state == held {
				continue
			}
			if node.wants == nil || node.wants.met(open) {
				out[lv.priority] = true
			}
		}
	}
	return out
}

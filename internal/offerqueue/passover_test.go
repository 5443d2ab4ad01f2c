package offerqueue

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
		t, s, ok := q.Next(1, nil)
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

// TestPassOverWaitsForAnOfferableSender: a starving level whose senders have
// all declined stays starving, and takes the first offer after an opening
// makes one of them offerable again, ahead of the higher level.
func TestPassOverWaitsForAnOfferableSender(t *testing.T) {
	var q Queue
	q.SetPassOverLimit(2)
	low := q.Push(named("low"), 0)
	q.Decline(low, 1)
	for range 5 {
		hi := q.Push(named("high"), 1)
		got, s, ok := q.Next(1, nil)
		require.True(t, ok)
		require.Equal(t, hi, got, "low declined at openings 1: %v goes first", s)
		q.Offered(got)
		q.Remove(got)
	}
	q.Push(named("high"), 1)
	got, _, ok := q.Next(2, nil)
	require.True(t, ok)
	require.Equal(t, low, got, "after five pass-overs, low goes first once it may be offered again")
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
	got, _, _ := q.Next(1, nil)
	require.Equal(t, hi, got, "the new low level has not been passed over yet")
	_ = low
}

// TestPassOverRandomised drives queues with random pushes, removals,
// declines and openings, and checks the bound on a level's wait against a
// direct count: a level is passed over fewer than k + 2n − 1 times in a row
// while it has a sender that may be offered channels.
func TestPassOverRandomised(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 1))
		k, n := 1+rng.IntN(4), 1+rng.IntN(4)
		var q Queue
		q.SetPassOverLimit(k)
		var tickets []Ticket
		waited := map[int]int{} // offers since the level's last, while it had an offerable sender
		openings := uint64(1)
		for range 300 {
			switch r := rng.IntN(10); {
			case r < 4:
				p := rng.IntN(n)
				tickets = append(tickets, q.Push(named(fmt.Sprint(p)), p))
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
			case r < 6:
				openings++
			default:
				offerable := offerableLevels(&q, openings)
				tk, s, ok := q.Next(openings, nil)
				if !ok {
					require.Empty(t, offerable, "seed %d: Next found none", seed)
					continue
				}
				var p int
				fmt.Sscan(string(s.(named)), &p)
				q.Offered(tk)
				q.Decline(tk, openings)
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

// offerableLevels returns the priorities with a sender Next could offer to.
func offerableLevels(q *Queue, openings uint64) map[int]bool {
	out := map[int]bool{}
	for _, lv := range q.levels {
		if q.firstOffered(lv.head, openings, nil) >= 0 {
			out[lv.priority] = true
		}
	}
	return out
}

package overlay

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRandomGraph: the graph is simple, symmetric and connected, nearly
// every node has the degree asked, and a seed draws the same graph again.
func TestRandomGraph(t *testing.T) {
	for _, c := range []struct{ n, degree int }{{3, 2}, {10, 3}, {50, 8}, {1000, 8}, {200, 20}} {
		adj := randomGraph(c.n, c.degree, rand.New(rand.NewPCG(7, 1)))
		short := 0
		for a, nb := range adj {
			if !slices.IsSorted(nb) {
				t.Fatalf("n=%d: neighbours of %d not sorted: %v", c.n, a, nb)
			}
			if len(nb) > c.degree {
				t.Fatalf("n=%d: node %d has %d neighbours, above %d", c.n, a, len(nb), c.degree)
			}
			if len(nb) < c.degree {
				short++
			}
			for i, b := range nb {
				if int(b) == a || (i > 0 && nb[i-1] == b) {
					t.Fatalf("n=%d: node %d: self-loop or double edge in %v", c.n, a, nb)
				}
				if !slices.Contains(adj[b], int32(a)) {
					t.Fatalf("n=%d: edge %d–%d one way only", c.n, a, b)
				}
			}
		}
		if short > c.n/50+1 {
			t.Errorf("n=%d degree %d: %d nodes short of the degree", c.n, c.degree, short)
		}
		if !connected(adj) {
			t.Errorf("n=%d degree %d: not connected", c.n, c.degree)
		}
		again := randomGraph(c.n, c.degree, rand.New(rand.NewPCG(7, 1)))
		other := randomGraph(c.n, c.degree, rand.New(rand.NewPCG(8, 1)))
		if !slices.EqualFunc(adj, again, slices.Equal) {
			t.Errorf("n=%d: the same seed drew another graph", c.n)
		}
		if c.n > 3 && slices.EqualFunc(adj, other, slices.Equal) {
			t.Errorf("n=%d: another seed drew the same graph", c.n)
		}
	}
}

func connected(adj [][]int32) bool {
	seen := make([]bool, len(adj))
	todo := []int32{0}
	seen[0] = true
	count := 1
	for len(todo) > 0 {
		a := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, b := range adj[a] {
			if !seen[b] {
				seen[b] = true
				count++
				todo = append(todo, b)
			}
		}
	}
	return count == len(adj)
}

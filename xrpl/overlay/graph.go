package overlay

import (
	"math/rand/v2"
	"slices"
)

// randomGraph returns the neighbours of each of n nodes, in increasing
// order, in a connected random graph where nearly every node has degree
// neighbours: a ring through a random permutation first (so the graph is
// connected), then random edges between nodes still short of degree. A node
// may end one or two short when the last candidates are all its neighbours
// already. It needs 2 <= degree < n.
func randomGraph(n, degree int, rng *rand.Rand) [][]int32 {
	adj := make([][]int32, n)
	linked := func(a, b int) bool { return slices.Contains(adj[a], int32(b)) }
	link := func(a, b int) {
		adj[a] = append(adj[a], int32(b))
		adj[b] = append(adj[b], int32(a))
	}
	ring := rng.Perm(n)
	for i, a := range ring {
		b := ring[(i+1)%n]
		if !linked(a, b) { // n == 2 would link twice
			link(a, b)
		}
	}
	// short lists the nodes still below degree; candidates are drawn from
	// it, so the draw stays cheap as the graph fills up.
	short := make([]int, 0, n)
	for i := range n {
		if len(adj[i]) < degree {
			short = append(short, i)
		}
	}
	const tries = 32
	for _, a := range slices.Clone(short) {
		for len(adj[a]) < degree {
			found := false
			for range tries {
				if len(short) == 0 {
					break
				}
				k := rng.IntN(len(short))
				b := short[k]
				if b == a || len(adj[b]) >= degree || linked(a, b) {
					if len(adj[b]) >= degree {
						short[k] = short[len(short)-1]
						short = short[:len(short)-1]
					}
					continue
				}
				link(a, b)
				found = true
				break
			}
			if !found {
				break
			}
		}
	}
	for i := range adj {
		slices.Sort(adj[i])
	}
	return adj
}

package overlay

import (
	"container/heap"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
)

// Bound is the earliest any strategy could have every fetching node of an
// overlay hold the whole ledger: a floor that no scheduling can beat, set
// by the ledger's depth, the graph and its latencies.
type Bound struct {
	// Depth is the number of edges on the ledger's longest path from the
	// root to a leaf. A node learns a child's hash only from its parent's
	// bytes, so a fetch needs at least Depth+1 round trips one after the
	// other, whatever its width.
	Depth int
	// T100 is when the last fetching node could hold the deepest leaf.
	T100 time.Duration
}

// LowerBound computes cfg's Bound, without running a simulation. It draws
// the same graph, latencies and seeders from cfg.Seed as Run, and assumes
// the best a strategy could do: every request goes to the neighbour that
// answers soonest, timed so that the neighbour holds what it asks for by
// the end of its service (a serving node answers with what it holds then),
// to a serving node that is never busy (the service time of a one-object
// request, no queueing) and never limits. Level by level down
// the longest path, a fetching node v holds level k at
//
//	t(v,k) = min over neighbours u of max(t(v,k-1) + d(u,v) + s, t(u,k)) + d(u,v)
//
// where d is the one-way latency, s the service time, t(v,-1) = 0 (the
// root's hash is known at the start) and a seeder holds every level at 0:
// v can ask for level k only once it holds level k-1, and u can answer only
// once it holds level k itself. Each level is a shortest-path problem over
// the graph, solved by Dijkstra's algorithm. It fails only with an error
// wrapping ErrBadConfig.
func LowerBound(cfg Config) (Bound, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Bound{}, err
	}
	s := newSimulation(cfg, Adaptive)
	depth := ledgerDepth(cfg.Ledger)
	var last time.Duration
	for i, t := range s.nodeBounds(depth) {
		if !s.nodes[i].seeder {
			last = max(last, t)
		}
	}
	return Bound{Depth: depth, T100: last}, nil
}

// nodeBounds returns, for each node of s, the earliest it could hold a
// leaf depth edges below the root (see LowerBound); 0 for the seeders.
func (s *simulation) nodeBounds(depth int) []time.Duration {
	service := s.cfg.Service.Time(1, 0)
	prev := make([]time.Duration, len(s.nodes)) // t(v, k-1)
	cur := make([]time.Duration, len(s.nodes))
	for range depth + 1 {
		levelTimes(s.nodes, prev, cur, service)
		prev, cur = cur, prev
	}
	return prev
}

// levelTimes sets cur[v] to when node v could hold one level, given prev,
// when each node could hold the level above (see LowerBound).
func levelTimes(nodes []*node, prev, cur []time.Duration, service time.Duration) {
	const unset = time.Duration(1<<63 - 1)
	q := &timeQueue{}
	for i, n := range nodes {
		cur[i] = unset
		if n.seeder {
			cur[i] = 0
			heap.Push(q, timed{node: int32(i)})
		}
	}
	done := make([]bool, len(nodes))
	for q.Len() > 0 {
		u := heap.Pop(q).(timed)
		if done[u.node] {
			continue
		}
		done[u.node] = true
		n := nodes[u.node]
		for k, v := range n.neighbours {
			if done[v] || nodes[v].seeder {
				continue
			}
			d := n.latency[k]
			t := max(prev[v]+d+service, u.at) + d
			if t < cur[v] {
				cur[v] = t
				heap.Push(q, timed{node: v, at: t})
			}
		}
	}
}

// ledgerDepth returns the number of edges on l's longest root-to-leaf path.
func ledgerDepth(l *ledger.Ledger) int {
	type item struct {
		h     ledger.Hash
		depth int
	}
	deepest := 0
	stack := []item{{h: l.Root()}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		deepest = max(deepest, it.depth)
		data, _ := l.Get(it.h)
		n, err := ledger.Decode(data)
		if err != nil || n.Kind != ledger.Inner {
			continue
		}
		for _, c := range n.Children {
			stack = append(stack, item{h: c, depth: it.depth + 1})
		}
	}
	return deepest
}

// timed is a node and the time it could hold a level.
type timed struct {
	node int32
	at   time.Duration
}

// timeQueue is a min-heap of timed by time, for Dijkstra's algorithm.
type timeQueue []timed

func (q timeQueue) Len() int           { return len(q) }
func (q timeQueue) Less(i, j int) bool { return q[i].at < q[j].at }
func (q timeQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *timeQueue) Push(x any)        { *q = append(*q, x.(timed)) }
func (q *timeQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

package fetch

import "github.com/peersched/peersched/xrpl/ledger"

// Store holds ledger nodes by hash: the nodes an incremental fetch already
// has (see Config.Base). *ledger.Ledger is a Store. Get's bytes must be the
// node's serialized bytes, which hash to its name; a Store is read from the
// fetch's callbacks and must be safe for concurrent reads.
type Store interface {
	Get(h ledger.Hash) ([]byte, bool)
}

// reusedTree is what the base holds of a subtree of the ledger being
// fetched: the nodes and bytes under its root (root included) that the
// fetch takes from the base instead of asking for them.
type reusedTree struct {
	nodes int
	bytes int64
}

// reuse splits the children of each verified inner node in results into
// those to fetch and those the base has: a child the base holds is not
// asked for; its subtree is walked in the base instead and recorded in
// r.reused, and any node below it that the base lacks (a base that holds
// part of a tree) goes into r.children to be fetched. It runs outside the
// strategy's lock, like examine.
func reuse(base Store, results []itemResult) {
	if base == nil {
		return
	}
	for i := range results {
		r := &results[i]
		if r.kind != itemOK || len(r.children) == 0 {
			continue
		}
		var fetch []ledger.Hash
		for _, c := range r.children {
			// A child the base lacks comes back as the one node to fetch.
			t, lacking := walkBase(base, c)
			if t.nodes > 0 {
				r.reused = append(r.reused, t)
			}
			fetch = append(fetch, lacking...)
		}
		r.children = fetch
	}
}

// walkBase walks the subtree under root in base and returns what base holds
// of it, and the hashes of the nodes under it that it lacks, root itself
// included: those must be fetched. The base's bytes are taken as its
// contract says (see Store), unhashed: this walk runs for every inner node
// an incremental fetch verifies.
func walkBase(base Store, root ledger.Hash) (reusedTree, []ledger.Hash) {
	var t reusedTree
	lacking := walkHeld(base, root, false, func(data []byte) {
		t.nodes++
		t.bytes += int64(len(data))
	}, nil)
	return t, lacking
}

// walkHeld walks, depth first, the part of the tree under root that s
// holds, calling held with each node s holds (a value that decodes and,
// if verify is set, hashes to its name), and returns the hashes of the nodes it reaches that s
// lacks. For each of those, if also is set, it asks also first, and
// returns only what also lacks.
//
// A node s lacks ends the walk down that branch: what is below it cannot
// be reached from the root through s. So the walk finds exactly the nodes
// under root that s holds when s holds a tree hanging from the root (every
// node's parent held with it), which is what a fetch keeps as it goes.
func walkHeld(s Store, root ledger.Hash, verify bool, held func(data []byte), also func(ledger.Hash) []ledger.Hash) []ledger.Hash {
	var lacking []ledger.Hash
	todo := []ledger.Hash{root}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		n, data, ok := getNode(s, h, verify)
		if !ok {
			if also != nil {
				lacking = append(lacking, also(h)...)
			} else {
				lacking = append(lacking, h)
			}
			continue
		}
		held(data)
		todo = append(todo, n.Children...)
	}
	return lacking
}

// getNode reads node h from s, and reports false unless s holds bytes that
// decode and, if verify is set, hash to h: in a NodeStore, a value half
// written when a process died, or otherwise damaged, counts as absent, and
// is fetched again.
func getNode(s Store, h ledger.Hash, verify bool) (ledger.Node, []byte, bool) {
	data, ok := s.Get(h)
	if !ok || (verify && !ledger.Verify(h, data)) {
		return ledger.Node{}, nil, false
	}
	n, err := ledger.Decode(data)
	if err != nil {
		return ledger.Node{}, nil, false
	}
	return n, data, true
}

// resumed is what a fetch found in its store when it began.
type resumed struct {
	tree    reusedTree   // the nodes under the root the store holds
	reused  []reusedTree // subtrees the store lacks and the base holds
	lacking []ledger.Hash
}

// resumeWalk walks the tree under root that store holds, as a fetch that
// was interrupted left it, and returns what it holds and the nodes it
// lacks below what it holds: those (or the root, for an empty store) are
// what the fetch still has to fetch. Where base is set, a node the store
// lacks is looked for in base, as the fetch would have (see reuse), since
// the nodes taken from the base are not written to the store.
func resumeWalk(store, base Store, root ledger.Hash) resumed {
	var r resumed
	var fromBase func(ledger.Hash) []ledger.Hash
	if base != nil {
		fromBase = func(h ledger.Hash) []ledger.Hash {
			t, lacking := walkBase(base, h)
			if t.nodes > 0 {
				r.reused = append(r.reused, t)
			}
			return lacking
		}
	}
	r.lacking = walkHeld(store, root, true, func(data []byte) {
		r.tree.nodes++
		r.tree.bytes += int64(len(data))
	}, fromBase)
	return r
}

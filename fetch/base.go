package fetch

import "github.com/peersched/peersched/ledger"

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
// of it, and the hashes of the nodes under it that it lacks (or holds as
// bytes that are not a node), root itself included: those must be fetched.
func walkBase(base Store, root ledger.Hash) (reusedTree, []ledger.Hash) {
	var t reusedTree
	var lacking []ledger.Hash
	todo := []ledger.Hash{root}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		data, ok := base.Get(h)
		if !ok {
			lacking = append(lacking, h)
			continue
		}
		n, err := ledger.Decode(data)
		if err != nil {
			lacking = append(lacking, h)
			continue
		}
		t.nodes++
		t.bytes += int64(len(data))
		todo = append(todo, n.Children...)
	}
	return t, lacking
}

package main

import (
	"fmt"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// rebuild gathers the leaves under root from the fetched nodes (the node
// store, which holds what this fetch and any it resumed from brought) and,
// for the subtrees the fetch reused, from base (nil if none), and builds
// their state map from scratch, sharing nothing with the tree the peers
// served but the leaves' contents. It returns the new map's root, which is
// the ledger's account_hash only if the fetch brought (or reused) the whole
// state.
func rebuild(fetched fetch.Store, root ledger.Hash, base fetch.Store) (ledger.Hash, error) {
	var entries []ledger.Entry
	todo := []ledger.Hash{root}
	for len(todo) > 0 {
		h := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		data, ok := fetched.Get(h)
		if !ok && base != nil {
			data, ok = base.Get(h)
		}
		if !ok {
			return ledger.Hash{}, fmt.Errorf("node %s was neither fetched nor in the base", h.Hex())
		}
		n, err := ledger.Decode(data)
		if err != nil {
			return ledger.Hash{}, fmt.Errorf("node %s: %w", h.Hex(), err)
		}
		if n.Kind == ledger.Leaf {
			entries = append(entries, ledger.Entry{Key: n.Key, Data: n.Payload})
		}
		todo = append(todo, n.Children...)
	}
	l, err := ledger.Build(entries)
	if err != nil {
		return ledger.Hash{}, err
	}
	return l.Root(), nil
}

package main

import (
	"fmt"

	"github.com/peersched/peersched/xrpl/ledger"
)

// source is the ledger a run serves and fetches, and what the fetch starts
// from: a generated ledger, or a real one read from a file, with its header,
// and possibly a real base ledger for an incremental fetch.
type source struct {
	ledger *ledger.Ledger // nil with -connect, unless -ledger: the peers have it, this process does not
	root   ledger.Hash    // with -connect, unless -ledger: -root, or the generated ledger's
	nodes  int            // with -connect, unless -ledger: -expect, or the generated ledger's
	header *ledger.Header // nil for a generated ledger
	base   *ledger.Ledger // nil unless -base
	baseHd *ledger.Header
}

// loadSource generates or loads the ledgers o names. Loading checks each
// file's account_hash and ledger hash (see ledger.Load).
func loadSource(o options) (source, error) {
	if o.root != (ledger.Hash{}) {
		// Nothing to build: generating a ledger of millions of leaves
		// takes minutes and gigabytes, for its root hash only.
		return source{root: o.root, nodes: o.expect}, nil
	}
	if o.ledger == "" && o.connect != nil {
		// The peers serve the tree; the fetch needs its root and size
		// only, which streaming it gives without holding it (mainnet's
		// 19 million entries would take gigabytes).
		sum, err := ledger.GenerateStream(o.seed, o.objects, nil)
		return source{root: sum.Root, nodes: sum.Nodes}, err
	}
	if o.ledger == "" {
		l, err := ledger.Generate(o.seed, o.objects)
		return source{ledger: l}, err
	}
	l, h, err := ledger.LoadFile(o.ledger)
	if err != nil {
		return source{}, err
	}
	src := source{ledger: l, header: &h}
	if o.base != "" {
		b, bh, err := ledger.LoadFile(o.base)
		if err != nil {
			return source{}, fmt.Errorf("-base: %w", err)
		}
		src.base, src.baseHd = b, &bh
	}
	return src, nil
}

// expected is how many nodes the fetch will download, if known: all of the
// ledger's, unless it starts from a base.
func (s source) expected() int {
	switch {
	case s.ledger == nil:
		return s.nodes
	case s.base != nil:
		return 0
	}
	return s.ledger.Len()
}

// rootHash is the root the fetch starts from.
func (s source) rootHash() ledger.Hash {
	if s.ledger == nil {
		return s.root
	}
	return s.ledger.Root()
}

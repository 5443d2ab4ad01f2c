package node

import "github.com/peersched/peersched/xrpl/ledger"

// LeafHashes returns the hashes of up to max of l's leaves (its state
// entries), in ascending hash order: what lookups ask for, as an RPC server
// asks for the leaf of an account it is asked about.
func LeafHashes(l *ledger.Ledger, max int) []ledger.Hash {
	var out []ledger.Hash
	for h := range l.Hashes() {
		if len(out) >= max {
			break
		}
		data, _ := l.Get(h)
		if n, err := ledger.Decode(data); err == nil && n.Kind == ledger.Leaf {
			out = append(out, h)
		}
	}
	return out
}

// holds reports whether an answer carries the node h, verified.
func holds(answer ledger.Objects, h ledger.Hash) bool {
	for _, it := range answer.Items {
		if it.Hash == h && ledger.Verify(h, it.Data) {
			return true
		}
	}
	return false
}

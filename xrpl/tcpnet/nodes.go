package tcpnet

import "github.com/peersched/peersched/xrpl/ledger"

// Nodes is what a Server serves: the nodes it can find by hash. A
// *ledger.Ledger is Nodes held in memory; a node store on disk is Nodes
// that need not fit in memory (see ServerConfig.Nodes). Get must be safe
// for concurrent use, and the server neither modifies nor keeps the bytes
// it returns past the reply it writes them in.
type Nodes interface {
	Get(h ledger.Hash) ([]byte, bool)
}

// answerFrom returns the honest answer to req from nodes, as
// ledger.Ledger.Answer does: each requested hash found, with its bytes, in
// the order asked; hashes not found are left out.
func answerFrom(nodes Nodes, req ledger.GetObjects) ledger.Objects {
	items := make([]ledger.Object, 0, len(req.Hashes))
	for _, h := range req.Hashes {
		if data, ok := nodes.Get(h); ok {
			items = append(items, ledger.Object{Hash: h, Data: data})
		}
	}
	return ledger.Objects{Items: items}
}

package ledger

// The messages of a fetch. A host sends a GetObjects through the scheduler
// and gets an Objects back; simulated peers (package simnet) answer with these
// values, and package wire encodes the same values for TCP. They are sent and
// delivered as values, not pointers.

// GetObjects asks a peer for the nodes named by Hashes.
type GetObjects struct {
	Hashes []Hash
}

// Objects answers a GetObjects: normally one Object per requested hash, in the
// order asked. A peer may be wrong or lying, so a fetcher matches items by
// Hash and checks each Data with Verify rather than trusting positions.
type Objects struct {
	Items []Object
}

// Object is one answered hash: the node's bytes, or Missing when the peer
// does not have it (then Data is nil).
type Object struct {
	Hash    Hash
	Data    []byte
	Missing bool
}

// Answer returns the honest answer to req from this ledger: each requested
// hash with its bytes, or Missing if the ledger has no such node. Data slices
// are shared with the ledger and must not be modified.
func (l *Ledger) Answer(req GetObjects) Objects {
	items := make([]Object, len(req.Hashes))
	for i, h := range req.Hashes {
		data, ok := l.Get(h)
		items[i] = Object{Hash: h, Data: data, Missing: !ok}
	}
	return Objects{Items: items}
}

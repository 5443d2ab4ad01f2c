package ledger

// The messages of a fetch. A host sends a GetObjects through the scheduler
// and gets an Objects back; simulated peers (package simnet) answer with these
// values, and package wire carries the same values over TCP as rippled's
// TMGetObjectByHash. They are sent and delivered as values, not pointers.

// GetObjects asks a peer for the nodes named by Hashes.
type GetObjects struct {
	Hashes []Hash
}

// AsGetObjects returns the GetObjects that message is, sent by value or by
// (non-nil) pointer, as a transport accepts it; false for anything else.
func AsGetObjects(message any) (GetObjects, bool) {
	switch m := message.(type) {
	case GetObjects:
		return m, true
	case *GetObjects:
		if m != nil {
			return *m, true
		}
	}
	return GetObjects{}, false
}

// Objects answers a GetObjects: one Object per requested hash the peer has,
// normally in the order asked. As in rippled, a node the peer lacks is left
// out rather than marked. A peer may be wrong or lying, so a fetcher matches
// items by Hash and checks each Data with Verify rather than trusting
// positions.
type Objects struct {
	Items []Object
}

// Object is one answered hash and the node's bytes.
type Object struct {
	Hash Hash
	Data []byte
}

// Answer returns the honest answer to req from this ledger: each requested
// hash it has, with its bytes, in the order asked; hashes it lacks are left
// out. Data slices are shared with the ledger and must not be modified.
func (l *Ledger) Answer(req GetObjects) Objects {
	items := make([]Object, 0, len(req.Hashes))
	for _, h := range req.Hashes {
		if data, ok := l.Get(h); ok {
			items = append(items, Object{Hash: h, Data: data})
		}
	}
	return Objects{Items: items}
}

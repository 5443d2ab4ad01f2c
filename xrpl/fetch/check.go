package fetch

import "github.com/peersched/peersched/xrpl/ledger"

// itemKind says what a response did for one hash it was asked for.
type itemKind uint8

const (
	// itemAbsent: the response has no item for the hash: the peer lacks
	// the node (and, as rippled does, left it out), or lost it.
	itemAbsent itemKind = iota
	// itemCorrupt: the bytes do not hash to the name asked for.
	itemCorrupt
	// itemUndecodable: the bytes hash to the name but are not a node. No
	// peer can do better, since the name itself was taken from a verified
	// parent: the ledger is broken, and the fetch cannot finish.
	itemUndecodable
	// itemOK: verified and decoded.
	itemOK
)

// itemResult is the verdict on one asked hash.
type itemResult struct {
	hash     ledger.Hash
	kind     itemKind
	size     int           // bytes, when OK
	data     []byte        // the node, when OK
	children []ledger.Hash // an inner node's children to fetch, when OK
	reused   []reusedTree  // its children the base holds (see reuse)
}

// examine is examineObjects for resp, an answer of any type, as the
// Peerset, which checks types itself, receives it. It reports false,
// appending nothing, if resp is not a ledger.Objects at all. (Run's
// requests declare their response type instead, and the scheduler refuses
// any other: see requestLocked.)
func examine(asked []ledger.Hash, resp any, dst []itemResult) ([]itemResult, bool) {
	switch m := resp.(type) {
	case ledger.Objects:
		return examineObjects(asked, m, dst), true
	case *ledger.Objects:
		if m != nil {
			return examineObjects(asked, *m, dst), true
		}
	}
	return dst, false
}

// examineObjects checks objs, the answer to a request for asked, and
// appends one result per asked hash to dst, in asked's order.
//
// A response is matched by hash, not by position: a peer may answer in any
// order, repeat items, or add items nobody asked for (those are ignored).
// For each hash the best item wins: one that verifies, else a corrupt one;
// with none the hash is absent. Honest peers answer in order, so the common
// case costs one comparison per item and no allocation beyond the decoded
// children (a peer that left items out costs a map of the rest).
func examineObjects(asked []ledger.Hash, objs ledger.Objects, dst []itemResult) []itemResult {
	var byHash map[ledger.Hash][]int // built only if positions disagree
	for i, h := range asked {
		r := itemResult{hash: h, kind: itemAbsent}
		if i < len(objs.Items) && objs.Items[i].Hash == h {
			judge(&r, &objs.Items[i])
		}
		if r.kind != itemOK {
			if byHash == nil {
				byHash = make(map[ledger.Hash][]int, len(objs.Items))
				for j := range objs.Items {
					byHash[objs.Items[j].Hash] = append(byHash[objs.Items[j].Hash], j)
				}
			}
			for _, j := range byHash[h] {
				if judge(&r, &objs.Items[j]); r.kind == itemOK {
					break
				}
			}
		}
		dst = append(dst, r)
	}
	return dst
}

// judge improves r with it, an item carrying r's hash, if it is better
// evidence than what r holds.
func judge(r *itemResult, it *ledger.Object) {
	if r.kind > itemCorrupt {
		return
	}
	if !ledger.Verify(r.hash, it.Data) {
		r.kind = itemCorrupt
		return
	}
	n, err := ledger.Decode(it.Data)
	if err != nil {
		r.kind = itemUndecodable
		return
	}
	r.kind, r.size, r.data, r.children = itemOK, len(it.Data), it.Data, n.Children
}

package fetch

import "github.com/peersched/peersched/xrpl/ledger"

// NodeStore is where a fetch keeps the nodes it verifies, and what it
// resumes from (see Config.Store): a Store that can also write. MemStore is
// one; a command that needs its fetch to survive a crash gives one on disk.
//
// Write keeps nodes, each under its hash, and returns once they are kept as
// durably as the store promises: surviving the process being killed, at
// least, for the fetch to resume after a crash. It must keep nodes in the
// order of its calls (what one call wrote is kept before the next call's
// nodes are), since the fetch relies on a parent being kept before its
// children. A failed Write may have kept part of its nodes. The fetch calls
// Write from one goroutine at a time and never modifies nodes' Data
// afterwards; the store may keep it.
//
// Get may return bytes that are not the node (a value half written when
// the process died, a disk's corruption): the fetch checks every value it
// reads against its hash and takes one that does not match as absent.
type NodeStore interface {
	Store
	Write(nodes []Node) error
}

// Node is a ledger node and its hash, as a NodeStore keeps it.
type Node struct {
	Hash ledger.Hash
	Data []byte
}

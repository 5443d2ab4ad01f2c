package overlay

import (
	"math/bits"

	"github.com/peersched/peersched/xrpl/ledger"
)

// content is the ledger every node fetches, shared by the whole
// simulation: node bytes are immutable and named by their hash, so one copy
// serves every simulated node, and each node keeps only a bitset of the
// nodes it holds (a few hundred bytes where a copy would take the ledger's
// size). That is what lets ten thousand nodes share one process.
type content struct {
	ledger *ledger.Ledger
	index  map[ledger.Hash]int32 // each node's position in ledger.Hashes
}

func newContent(l *ledger.Ledger) *content {
	c := &content{ledger: l, index: make(map[ledger.Hash]int32, l.Len())}
	for h := range l.Hashes() {
		c.index[h] = int32(len(c.index))
	}
	return c
}

// holdings records which of the ledger's nodes one simulated node holds,
// by index; the zero value holds nothing.
type holdings []uint64

func newHoldings(n int) holdings { return make(holdings, (n+63)/64) }

func (h holdings) has(i int32) bool { return h[i/64]&(1<<(i%64)) != 0 }

// add marks node i held and reports whether it was new.
func (h holdings) add(i int32) bool {
	w, bit := i/64, uint64(1)<<(i%64)
	if h[w]&bit != 0 {
		return false
	}
	h[w] |= bit
	return true
}

// fill marks the first n nodes held.
func (h holdings) fill(n int) {
	for i := range n {
		h.add(int32(i))
	}
}

// count returns how many nodes are held.
func (h holdings) count() int {
	n := 0
	for _, w := range h {
		n += bits.OnesCount64(w)
	}
	return n
}

package fetch

import (
	"sync"

	"github.com/peersched/peersched/xrpl/ledger"
)

// MemStore is a Store kept in memory: hand its Put to Config.Received to keep
// what a fetch brings, then read it back, or use it as the Base of the next
// fetch. It is safe for concurrent use; the zero MemStore is empty and ready.
type MemStore struct {
	mu    sync.Mutex
	nodes map[ledger.Hash][]byte
}

// Put keeps data as the node named h, replacing what was kept under h. The
// store keeps data itself, not a copy.
func (s *MemStore) Put(h ledger.Hash, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes == nil {
		s.nodes = make(map[ledger.Hash][]byte)
	}
	s.nodes[h] = data
}

// Get returns the node named h, if the store has it.
func (s *MemStore) Get(h ledger.Hash) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.nodes[h]
	return data, ok
}

// Len returns the number of nodes kept.
func (s *MemStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.nodes)
}

// Hashes returns the names of the nodes kept, in no fixed order.
func (s *MemStore) Hashes() []ledger.Hash {
	s.mu.Lock()
	defer s.mu.Unlock()
	hashes := make([]ledger.Hash, 0, len(s.nodes))
	for h := range s.nodes {
		hashes = append(hashes, h)
	}
	return hashes
}

// Write keeps nodes, as Put does each. It never fails. Implements NodeStore.
func (s *MemStore) Write(nodes []Node) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes == nil {
		s.nodes = make(map[ledger.Hash][]byte)
	}
	for _, n := range nodes {
		s.nodes[n.Hash] = n.Data
	}
	return nil
}

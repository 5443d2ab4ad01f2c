package pebblestore

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/peersched/peersched/xrpl/ledger"
)

// loadBatchBytes is how many bytes of nodes a Loader gathers before it
// commits them: large enough that a commit's cost is spread over thousands
// of nodes, small beside the memtables.
const loadBatchBytes = 4 << 20

// Loader fills a store with many nodes, as building a ledger into it does:
// Add copies each node into a batch, committed every few megabytes, and
// Flush commits the rest. Like Write, it copies the caller's bytes, so a
// builder can reuse its buffer; unlike Write, it gathers many calls into
// one commit. A Loader is not safe for
// concurrent use; the store's readers see its nodes batch by batch.
type Loader struct {
	s     *Store
	batch *pebble.Batch
}

// NewLoader returns a Loader that adds to s.
func (s *Store) NewLoader() *Loader {
	return &Loader{s: s, batch: s.db.NewBatch()}
}

// Add adds the node named h, whose bytes are data (copied).
func (l *Loader) Add(h ledger.Hash, data []byte) error {
	if err := l.batch.Set(h[:], data, nil); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	if l.batch.Len() >= loadBatchBytes {
		return l.Flush()
	}
	return nil
}

// Flush commits the nodes added since the last commit.
func (l *Loader) Flush() error {
	if l.batch.Empty() {
		return nil
	}
	err := l.batch.Commit(pebble.NoSync)
	_ = l.batch.Close()
	l.batch = l.s.db.NewBatch()
	if err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	return nil
}

// Close drops what was added since the last Flush; call Flush first to
// keep it.
func (l *Loader) Close() { _ = l.batch.Close() }

// Peek returns the value stored under h without checking that it hashes
// to h: for a peer serving the store, whose every reader checks what it
// receives (a fetch does), and which would otherwise hash each node once
// more on its way out. Use Get to read a node to trust it.
func (s *Store) Peek(h ledger.Hash) ([]byte, bool) {
	value, closer, err := s.db.Get(h[:])
	if err != nil {
		return nil, false
	}
	data := append([]byte(nil), value...) // value is valid until closer is closed
	_ = closer.Close()
	return data, true
}

package pebblestore

import (
	"errors"
	"fmt"

	"github.com/peersched/peersched/xrpl/ledger"
)

// Scan calls fn with every value the store holds, in ascending order of
// key, which for nodes is the order of their hashes; node is valid only
// until fn returns. It stops at fn's first error and returns it, and
// reports a key that is not a hash as an error. It reads the whole store,
// through the block cache: for building what serves the store
// (nodestore/flatstore), not for a fetch.
func (s *Store) Scan(fn func(h ledger.Hash, node []byte) error) error {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	for it.First(); it.Valid(); it.Next() {
		key := it.Key()
		if len(key) != ledger.HashSize {
			err = fmt.Errorf("pebblestore: a key of %d bytes, not a hash", len(key))
			break
		}
		value, verr := it.ValueAndErr()
		if verr != nil {
			err = fmt.Errorf("pebblestore: %w", verr)
			break
		}
		if err = fn(ledger.Hash(key), value); err != nil {
			break
		}
	}
	if ierr := errors.Join(it.Error(), it.Close()); err == nil && ierr != nil {
		err = fmt.Errorf("pebblestore: %w", ierr)
	}
	return err
}

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/peersched/peersched/nodestore/pebblestore"
)

// nodeStore is where a fetch keeps the objects it fetches: -store's
// directory, which a later run resumes from, or a temporary one.
type nodeStore struct {
	*pebblestore.Store
	dir       string
	temporary bool // made for this fetch, removed by close
}

// openStore opens the store in dir, or in a new temporary directory if dir
// is "".
func openStore(dir string) (*nodeStore, error) {
	temporary := dir == ""
	if temporary {
		var err error
		if dir, err = os.MkdirTemp("", "ledgerfetch-store-"); err != nil {
			return nil, fmt.Errorf("-store: %w", err)
		}
	}
	s, err := pebblestore.Open(dir)
	if err != nil {
		if temporary {
			_ = os.RemoveAll(dir)
		}
		return nil, fmt.Errorf("-store: %w", err)
	}
	return &nodeStore{Store: s, dir: dir, temporary: temporary}, nil
}

// close closes the store, and removes it if it was temporary.
func (s *nodeStore) close() error {
	err := s.Close()
	if s.temporary {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// noteStore records the store's directory in r, unless it was temporary.
func (r *result) noteStore(o options, s *nodeStore) {
	if o.store != "" {
		r.StoreDir = s.dir
	}
}

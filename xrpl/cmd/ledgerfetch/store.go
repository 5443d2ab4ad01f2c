package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/nodestore/pebblestore"
)

// nodeStore is where a fetch keeps the objects it fetches: -store's
// directory, which a later run resumes from, or a temporary one.
type nodeStore struct {
	fetch.NodeStore
	disk      *pebblestore.Store // nil in memory
	dir       string
	temporary bool // made for this fetch, removed by close
}

// memStore is the -store value that keeps the objects in memory instead,
// to compare with the disk store: nothing survives the process, and its
// memory grows with the ledger.
const memStore = "mem"

// openStore opens the store in dir, or in a new temporary directory if dir
// is "", or in memory if dir is memStore.
func openStore(dir string) (*nodeStore, error) {
	if dir == memStore {
		return &nodeStore{NodeStore: &fetch.MemStore{}, dir: memStore}, nil
	}
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
	return &nodeStore{NodeStore: s, disk: s, dir: dir, temporary: temporary}, nil
}

// close closes the store, and removes it if it was temporary.
func (s *nodeStore) close() error {
	var err error
	if s.disk != nil {
		err = s.disk.Close()
	}
	if s.temporary {
		err = errors.Join(err, os.RemoveAll(s.dir))
	}
	return err
}

// compact merges the files of a store on disk that is kept (see
// pebblestore.Store.Compact), and returns how long that took: a temporary
// store is removed unread, and one in memory has nothing to merge, so
// neither is compacted (0).
func (s *nodeStore) compact(ctx context.Context) (time.Duration, error) {
	if s.disk == nil || s.temporary {
		return 0, nil
	}
	start := time.Now()
	err := s.disk.Compact(ctx)
	return time.Since(start), err
}

// noteStore records the store's directory in r, unless it was temporary.
func (r *result) noteStore(o options, s *nodeStore) {
	if o.store != "" {
		r.StoreDir = s.dir
	}
}

// checkStore completes o from -root's string and checks -store, -root and
// -expect against the other flags.
func (o *options) checkStore(root string) error {
	if root != "" {
		h, err := ledger.ParseHash(root)
		if err != nil || h == (ledger.Hash{}) {
			return fmt.Errorf("-root %q: want a ledger's root hash, 64 hex digits, as ledgerpeer prints it", root)
		}
		o.root = h
	}
	switch {
	case root != "" && o.connect == nil:
		return fmt.Errorf("-root needs -connect: in-process peers serve the ledger this process generates from -objects and -seed")
	case root != "" && o.ledger != "":
		return fmt.Errorf("-root and -ledger both name the ledger: give one")
	case o.expect != 0 && root == "":
		return fmt.Errorf("-expect %d needs -root: without it the ledger is generated here, and its node count known", o.expect)
	case o.expect < 0:
		return fmt.Errorf("-expect %d: want the ledger's node count, or 0 for unknown", o.expect)
	case o.store != "" && o.store != memStore && len(o.strategy) > 1:
		several := "both"
		if len(o.strategy) > 2 {
			several = "all"
		}
		return fmt.Errorf("-store %s with -strategy %s: the second fetch would resume from the first's objects; give one strategy", o.store, several)
	}
	return nil
}

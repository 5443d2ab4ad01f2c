package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/nodestore/flatstore"
	"github.com/peersched/peersched/xrpl/nodestore/pebblestore"
)

// flatFile is the file beside a -store directory's node store that a peer
// serves from with -flat on: the store's nodes sorted by hash, so that a
// lookup is one read (package flatstore). The node store stays the record
// of the ledger; this file is built from it, and again whenever it does
// not match it.
const flatFile = "nodes.flat"

// flatServed is a flat file a peer serves from, and what it holds.
type flatServed struct {
	*flatstore.Store
	meta storeMeta
}

// openFlat opens the store in dir to serve from its flat file (flatFile).
// If dir holds a complete store, of the ledger the flags name (see
// openServed for want and explicit), and a flat file of that ledger (its
// header's tag is the store's root, and its count the store's nodes), it
// opens that file and not the store. Otherwise it opens or builds the
// store (openOrBuild), builds the flat file from it, closes the store, and
// opens the file. It reports each build and what it serves on log.
func openFlat(ctx context.Context, dir string, want storeMeta, explicit bool, log io.Writer) (*flatServed, error) {
	have, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, flatFile)
	if have.Complete && (!explicit || have.sameSource(want)) {
		f, err := openFresh(path, have, log)
		if err != nil {
			return nil, err
		}
		if f != nil {
			return announce(f, have, log), nil
		}
	}
	s, err := openOrBuild(ctx, dir, want, explicit, log)
	if err != nil {
		return nil, err
	}
	err = buildFlat(ctx, path, s.Store, s.meta, log)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	f, err := flatstore.Open(path)
	if err != nil {
		return nil, err
	}
	return announce(f, s.meta, log), nil
}

// announce says on log what f serves, and returns it.
func announce(f *flatstore.Store, m storeMeta, log io.Writer) *flatServed {
	h := f.Header()
	fmt.Fprintf(log, "ledgerpeer: serving from %s: %d nodes in %d bytes, 2^%d buckets (a table of %.1f MiB in memory)\n", flatFile, h.Count, h.DataBytes, h.Bits, float64(h.TableBytes())/(1<<20))
	return &flatServed{Store: f, meta: m}
}

// openFresh opens the flat file at path if it holds the ledger m
// describes, and returns nil if there is none, if it does not open as a
// whole file of this version (flatstore.ErrFormat: cut short, its header
// or table damaged), or if it holds another ledger (saying so on log, but
// for a missing file): it is then to be built again.
func openFresh(path string, m storeMeta, log io.Writer) (*flatstore.Store, error) {
	f, err := flatstore.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, flatstore.ErrFormat):
		fmt.Fprintf(log, "ledgerpeer: %v: building it again\n", err)
		return nil, nil
	case err != nil:
		return nil, err
	}
	h := f.Header()
	if h.Tag.Hex() == m.Root && h.Count == uint64(m.Nodes) {
		return f, nil
	}
	fmt.Fprintf(log, "ledgerpeer: %s holds %d nodes of ledger %s, the store %d of %s: building it again\n", path, h.Count, h.Tag.Hex(), m.Nodes, m.Root)
	return nil, f.Close()
}

// buildFlat builds the flat file at path from s, which holds the ledger m
// describes, and reports its time and size on log. The build reads the
// store in key order, which is the hashes' order, and writes the file
// sequentially: its memory is the file's table (8 bytes a bucket) and a
// buffer, besides the store's block cache.
func buildFlat(ctx context.Context, path string, s *pebblestore.Store, m storeMeta, log io.Writer) error {
	root, err := ledger.ParseHash(m.Root)
	if err != nil {
		return fmt.Errorf("its description's root %q: %w", m.Root, err)
	}
	start := time.Now()
	seen := 0
	h, err := flatstore.Build(path, root, uint64(m.Nodes), func(add func(ledger.Hash, []byte) error) error {
		return s.Scan(func(h ledger.Hash, node []byte) error {
			if seen++; seen%(1<<20) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return add(h, node)
		})
	})
	if err == nil && h.Count != uint64(m.Nodes) {
		err = fmt.Errorf("the store holds %d values, its description says %d nodes", h.Count, m.Nodes)
		_ = os.Remove(path)
	}
	if err != nil {
		return fmt.Errorf("building %s: %w", path, err)
	}
	took := time.Since(start)
	fmt.Fprintf(log, "ledgerpeer: built %s from the store: %d nodes, %d bytes in %v (%.0f nodes/s)\n", path, h.Count, h.DataBytes, took.Round(time.Millisecond), float64(h.Count)/took.Seconds())
	return nil
}

// Package pebblestore keeps ledger nodes on disk, in a Pebble database
// (github.com/cockroachdb/pebble/v2): a fetch.NodeStore that survives the
// process being killed, so that a fetch given it resumes where the last one
// stopped.
//
// Pebble is a log-structured merge tree: a write goes to its write-ahead
// log and an in-memory table, flushed to disk in sorted files that are
// merged in the background. A fetch writes nodes whose keys are hashes,
// random by nature, at tens of megabytes a second; an LSM turns that into
// sequential writes, where a B+tree (bbolt) would touch a random page per
// key and split pages as it goes. Pebble is also what CockroachDB runs on,
// kept by its authors, in pure Go.
//
// Writes are not synced to the disk one by one (pebble.NoSync): what Write
// has returned is in the write-ahead log in the operating system's hands,
// which survives the process being killed. A machine that loses power may
// lose the last writes; the log is replayed up to its first damaged record,
// so what remains is still every write up to some point, in order, which
// is all a resumed fetch needs (see fetch.NodeStore).
package pebblestore

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/peersched/peersched/fetch"
	"github.com/peersched/peersched/ledger"
)

// cacheBytes is the block cache's size: the fetch reads the store once, as
// it begins (see fetch.Config.Store), so a small cache serves, and keeps
// the process's memory small.
const cacheBytes = 8 << 20

// memTableBytes is the size of Pebble's in-memory table, where writes go
// before they are flushed to a file on disk; Pebble holds two at most while
// one is being flushed. Node hashes are random, so every flushed file spans
// the whole key space and is merged with everything below it: a larger
// table means fewer merges per node. At a million leaves 32 MB (default
// 4 MB) cost 9% less CPU per node than 16 MB, and 64 MB 22% less; at four
// million, 64 MB saved only 4% more than 32 MB, and built without cgo,
// where Pebble keeps its tables on the Go heap, it doubled the fetcher's
// peak RSS (443 MB against 228 MB). See BENCHMARKS.md.
var memTableBytes uint64 = 32 << 20

// Store is a node store in a directory on disk. It is safe for concurrent
// use. Open one with Open; Close it when done.
type Store struct {
	db *pebble.DB
}

// Open opens the store in dir, creating dir and an empty store if there is
// none.
func Open(dir string) (*Store, error) {
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	// The plain file system, not Pebble's default wrapper around it that
	// watches for slow disks from a goroutine of its own, which a failed
	// Open leaves running.
	opts := &pebble.Options{Cache: cache, FS: vfs.Default, Logger: quiet{}, MemTableSize: memTableBytes}
	// Merges run in the background, one at a time by default: with spare
	// cores, a fetch writing hundreds of thousands of nodes a second needs
	// more of them, or Pebble stops its writes until they catch up.
	compactors := max(1, runtime.GOMAXPROCS(0)/4)
	opts.CompactionConcurrencyRange = func() (int, int) { return 1, compactors }
	for i := range opts.Levels {
		// Nodes are hashes and random-looking payloads: compressing them
		// costs CPU and saves nothing.
		opts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		// A resumed fetch reads every node it stored, by hash, in the
		// tree's order, which is no order for the keys: without a filter,
		// each lookup reads a block of every file of level 0 that may
		// hold the key (a resume of a million nodes took minutes).
		opts.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("pebblestore: opening %s: %w", dir, err)
	}
	return &Store{db: db}, nil
}

// Get returns the node named h, if the store holds it and it hashes to h.
// A value that does not (written by something else, or damaged) counts as
// absent, and so does one the database fails to read: the fetch asks peers
// for it again.
func (s *Store) Get(h ledger.Hash) ([]byte, bool) {
	value, closer, err := s.db.Get(h[:])
	if err != nil {
		return nil, false
	}
	data := append([]byte(nil), value...) // value is valid until closer is closed
	_ = closer.Close()
	if !ledger.Verify(h, data) {
		return nil, false
	}
	return data, true
}

// Write keeps nodes, each under its hash, in one atomic batch: after a
// crash, all of them are kept or none. Implements fetch.NodeStore.
func (s *Store) Write(nodes []fetch.Node) error {
	b := s.db.NewBatch()
	defer b.Close()
	for _, n := range nodes {
		if err := b.Set(n.Hash[:], n.Data, nil); err != nil {
			return fmt.Errorf("pebblestore: %w", err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	return nil
}

// Count returns how many values the store holds, whether or not they are
// nodes. It reads every key: for tests and tools, not for a fetch.
func (s *Store) Count() (int, error) {
	it, err := s.db.NewIter(nil)
	if err != nil {
		return 0, fmt.Errorf("pebblestore: %w", err)
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		n++
	}
	return n, errors.Join(it.Error(), it.Close())
}

// Close flushes nothing further (every Write has reached the log) and
// closes the database. The Store cannot be used afterwards.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	return nil
}

// quiet is Pebble's logger: it drops Pebble's informational messages,
// which would interleave with a command's output, and keeps its errors.
type quiet struct{}

func (quiet) Infof(string, ...any)              {}
func (quiet) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }
func (quiet) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

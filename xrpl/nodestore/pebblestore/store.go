// Package pebblestore keeps ledger nodes on disk, in a Pebble database
// (github.com/cockroachdb/pebble/v2): a fetch.NodeStore that survives the
// process being killed, so that a fetch given it resumes where the last one
// stopped.
//
// Pebble is a log-structured merge tree: a write goes to its write-ahead
// log and an in-memory table, flushed to disk in sorted files that are
// merged later. A fetch writes nodes whose keys are hashes, random by
// nature, at tens of megabytes a second; an LSM turns that into sequential
// writes, where a B+tree (bbolt) would touch a random page per key and
// split pages as it goes. Pebble is also what CockroachDB runs on, kept by
// its authors, in pure Go.
//
// A fetch is a bulk load: every key is new, none is overwritten or
// deleted, and nothing is read until it ends. Merging while it writes, as
// Pebble does by default, would cost more than the fetch itself: random
// keys make every flushed file overlap every other, so each merge
// rewrites everything below it (about six times each node at four million
// leaves, doubling the fetcher's CPU). So the store merges nothing on its
// own: every flushed file stays in level 0, a Bloom filter each, and a
// lookup probes them all. Compact merges them once, when a fetch has
// ended and the store is kept to be read; that costs about a microsecond a
// node, a third of what merging as it went did. A store only ever resumed
// from, or thrown away, need not be compacted at all.
//
// Each Write is synced to the disk before it returns (pebble.Sync): what
// Write has returned survives the process being killed, and the machine
// losing power. (Committed without a sync, a write waits in Pebble's log
// buffer, in the process's memory, until the buffer fills: a kill lost the
// last writes, TestWriteSurvivesKill.) The fetch writes from a goroutine
// of its own, in batches of up to a megabyte, so the syncs cost it little:
// about a tenth of its rate from 16 store-backed peers at a million leaves,
// nothing measurable in the demo (BENCHMARKS.md, "The fetch's store
// synced"). After a crash the log is replayed up
// to its first damaged record, so what remains is every write up to some
// point, in order, which is all a resumed fetch needs (see
// fetch.NodeStore).
package pebblestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// DefaultCacheBytes is the block cache's size unless Options say
// otherwise: a fetch reads its store once, as it begins (see
// fetch.Config.Store), so a small cache serves, and keeps the process's
// memory small.
const DefaultCacheBytes = 8 << 20

// memTableBytes is the size of Pebble's in-memory table, where writes go
// before they are flushed to a file on disk; Pebble holds two at most while
// one is being flushed. Each flush adds a file to level 0, and one more
// Bloom filter for each lookup to probe until Compact: at 32 MB (default
// 4 MB), about fifty at four million leaves. Built without cgo, Pebble
// keeps these tables on the Go heap, where 64 MB doubled the fetcher's
// peak RSS (443 MB against 228 MB).
var memTableBytes uint64 = 32 << 20

// Store is a node store in a directory on disk. It is safe for concurrent
// use. Open one with Open; Close it when done.
type Store struct {
	db *pebble.DB
}

// Options say how a store is opened. The zero value is a fetch's store.
type Options struct {
	// CacheBytes is the size of the block cache, which keeps the blocks of
	// the store's files last read, index and data, in memory (outside the
	// Go heap when built with cgo); 0 means DefaultCacheBytes. A store
	// served from reads at random across all of it: every lookup whose
	// blocks the cache lacks reads them from the file and checks their
	// checksums.
	CacheBytes int64
	// OpenFiles is how many of its files the store keeps open, each with
	// its reader (its footer, properties and the top of its index); 0
	// means Pebble's default, 1,000. A lookup in a file not open opens it,
	// reads those, and closes another: a store served from at random
	// should keep every file open (Store.Tables counts them).
	OpenFiles int
}

// Open opens the store in dir with the zero Options, creating dir and an
// empty store if there is none.
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// OpenWith opens the store in dir as o says, creating dir and an empty
// store if there is none.
func OpenWith(dir string, o Options) (*Store, error) {
	if o.CacheBytes < 0 || o.OpenFiles < 0 {
		return nil, fmt.Errorf("pebblestore: a cache of %d bytes, %d open files", o.CacheBytes, o.OpenFiles)
	}
	cacheBytes := o.CacheBytes
	if cacheBytes == 0 {
		cacheBytes = DefaultCacheBytes
	}
	cache := pebble.NewCache(cacheBytes)
	defer cache.Unref()
	// The plain file system, not Pebble's default wrapper around it that
	// watches for slow disks from a goroutine of its own, which a failed
	// Open leaves running.
	opts := &pebble.Options{Cache: cache, FS: vfs.Default, Logger: quiet{}, MemTableSize: memTableBytes, MaxOpenFiles: o.OpenFiles}
	// No merges but Compact's (see the package's doc), and so no limit on
	// the files level 0 may hold before Pebble stops writes to let merges
	// catch up: none would.
	opts.DisableAutomaticCompactions = true
	opts.L0StopWritesThreshold = math.MaxInt32
	// Compact splits its work into merges that run at once, one by
	// default.
	mergers := max(1, runtime.GOMAXPROCS(0)/2)
	opts.CompactionConcurrencyRange = func() (int, int) { return 1, mergers }
	for i := range opts.Levels {
		// Nodes are hashes and random-looking payloads: compressing them
		// costs CPU and saves nothing.
		opts.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
		// A resumed fetch reads every node it stored, by hash, in the
		// tree's order, which is no order for the keys: without a filter,
		// each lookup reads a block of every file of level 0 that may
		// hold the key (a resume of a million nodes took minutes).
		// (Pebble probes no filter in its last level, where a merged
		// store's files are: a store only served from, once merged, spends
		// nothing on them but disk.)
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
	if err := b.Commit(pebble.Sync); err != nil {
		return fmt.Errorf("pebblestore: %w", err)
	}
	return nil
}

// Compact merges the files the store's writes left in level 0 into
// Pebble's levels, so that a lookup reads one file a level instead of
// probing every file written (see the package's doc). It is worth calling
// once a fetch has ended, if the store is kept to be read, and before a
// fetch resumes from a store that a killed one left unmerged: the resume
// reads every node it holds. With nothing in level 0, it does nothing. It
// may run beside Get and Write, and a store killed while it runs loses
// nothing.
func (s *Store) Compact(ctx context.Context) error {
	if s.db.Metrics().Levels[0].TablesCount == 0 {
		return nil
	}
	if err := s.db.Compact(ctx, []byte{}, afterEveryHash, true); err != nil {
		return fmt.Errorf("pebblestore: compacting: %w", err)
	}
	return nil
}

// afterEveryHash is a key greater than every node's: Compact's end, which
// it excludes.
var afterEveryHash = bytes.Repeat([]byte{0xff}, len(ledger.Hash{})+1)

// Tables returns how many files the store's nodes are in, and the size of
// their index blocks: what a served store should keep open (see
// Options.OpenFiles), and what its block cache must hold, besides the
// blocks it churns through, for a lookup to read from the files only the
// data block it needs (one whose index block the cache lacks reads that
// too: twice the reads). It reads each file's properties.
func (s *Store) Tables() (files int, indexBytes int64, err error) {
	levels, err := s.db.SSTables(pebble.WithProperties())
	if err != nil {
		return 0, 0, fmt.Errorf("pebblestore: %w", err)
	}
	for _, tables := range levels {
		for _, t := range tables {
			files++
			if t.Properties != nil {
				indexBytes += int64(t.Properties.IndexSize)
			}
		}
	}
	return files, indexBytes, nil
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

// Close closes the database; every Write that returned is on the disk
// already. The Store cannot be used afterwards.
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

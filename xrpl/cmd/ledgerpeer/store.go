package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/peersched/peersched/xrpl/internal/fdlimit"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/nodestore/pebblestore"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// A -store directory holds the node store (nodesDir, a Pebble database)
// and, beside it, what it holds (metaFile). The description is written
// before the store is built, marked complete once it is whole and merged,
// and read on every later run: a run killed while building leaves it
// incomplete, and the next run builds again.
const (
	nodesDir = "nodes"
	metaFile = "ledgerpeer.json"
)

// storeMeta describes the ledger a -store directory holds: where it came
// from (a seed and a count, or a file), and once built, its shape.
type storeMeta struct {
	Seed     uint64 `json:"seed,omitempty"`
	Objects  int    `json:"objects,omitempty"`
	File     string `json:"ledger_file,omitempty"` // with -ledger, as given
	Complete bool   `json:"complete"`
	Root     string `json:"root,omitempty"`
	Leaves   int    `json:"leaves,omitempty"`
	Nodes    int    `json:"nodes,omitempty"`
	Bytes    int64  `json:"bytes,omitempty"`
}

// describes says what the source is, as an error message shows it.
func (m storeMeta) describes() string {
	if m.File != "" {
		return fmt.Sprintf("the ledger in %s", m.File)
	}
	return fmt.Sprintf("the ledger generated from seed %d, %d objects", m.Seed, m.Objects)
}

// sameSource reports whether m and o name the same ledger.
func (m storeMeta) sameSource(o storeMeta) bool {
	return m.File == o.File && (m.File != "" || m.Seed == o.Seed && m.Objects == o.Objects)
}

// withStoreDefaults returns want, the ledger the source flags name, with
// -seed or -objects, if not given, taken from the store in dir when it
// holds a ledger generated whole: -seed 4 alone names the store's ledger
// if it was generated from seed 4, whatever its count of objects, rather
// than the default count's. A -ledger given, or a store of a ledger file,
// leaves want as it is.
func withStoreDefaults(dir string, want storeMeta, given map[string]bool) storeMeta {
	have, err := readMeta(dir)
	if err != nil || !have.Complete || have.File != "" || given["ledger"] {
		return want
	}
	if !given["seed"] {
		want.Seed = have.Seed
	}
	if !given["objects"] {
		want.Objects = have.Objects
	}
	return want
}

// errStoreMismatch: the flags name another ledger than the store holds.
var errStoreMismatch = errors.New("the store holds another ledger")

// storeServed is what a peer serves a -store directory from: its node
// store (servedStore, -flat off) or the flat file built from it
// (flatServed), and what the directory's description says it holds.
type storeServed interface {
	tcpnet.Nodes
	Close() error
	described() storeMeta
}

func (s *servedStore) described() storeMeta { return s.meta }
func (s *flatServed) described() storeMeta  { return s.meta }

// servedStore is a node store a peer serves from, and what it holds.
type servedStore struct {
	*pebblestore.Store
	meta storeMeta
}

// Get serves the node named h as stored: the fetch checks what it
// receives (pebblestore.Store.Peek).
func (s servedStore) Get(h ledger.Hash) ([]byte, bool) { return s.Peek(h) }

// openServed opens the store in dir for serving, keeping every file of
// the store open (servedOpenFiles), with a block cache of cacheBytes, or 0
// for one sized to the store's index (autoCacheBytes); it reports both on
// log. If dir holds a complete store, it is reused; want (the source the
// flags name) must then match it, unless explicit is false (no source flag
// was given: serve what is there). Otherwise the store is built from want,
// reporting its progress and cost on log.
func openServed(ctx context.Context, dir string, cacheBytes int64, want storeMeta, explicit bool, log io.Writer) (*servedStore, error) {
	s, err := openOrBuild(ctx, dir, want, explicit, log)
	if err != nil {
		return nil, err
	}
	files, index, err := s.Tables()
	if err != nil {
		_ = s.Close()
		return nil, err
	}
	if cacheBytes == 0 {
		cacheBytes = autoCacheBytes(index)
	}
	open := servedOpenFiles(files, fdlimit.Read().Cur)
	fmt.Fprintf(log, "ledgerpeer: a block cache of %d MiB for the store's %.1f MiB of index, and %d of its %d files open\n", cacheBytes>>20, float64(index)/(1<<20), open, files)
	// The cache's size and the files kept open are set as the store
	// opens.
	if err := s.Close(); err != nil {
		return nil, err
	}
	reopened, err := pebblestore.OpenWith(filepath.Join(dir, nodesDir), pebblestore.Options{CacheBytes: cacheBytes, OpenFiles: open})
	if err != nil {
		return nil, err
	}
	return &servedStore{Store: reopened, meta: s.meta}, nil
}

// servedOpenFiles is how many of a served store's files it keeps open:
// all of them and a margin for the files the store itself writes, as long
// as that leaves room under the process's limit (limit, 0 if unknown) for
// the connections it serves (tcpnet.DefaultMaxConns of them by default),
// and never fewer than Pebble's default. A file not kept open is opened,
// its footer, properties and index read, and another closed, for a lookup:
// BenchmarkPeek on the 4M store (435 files) with 200 open took 27 µs a
// lookup against 7 µs with all open, and the 19M store has 2,085 files,
// against Pebble's 1,000.
func servedOpenFiles(files int, limit uint64) int {
	const margin, pebbleDefault, reserve = 64, 1000, 1024
	n := max(files+margin, pebbleDefault)
	if limit > 0 && uint64(n)+reserve > limit {
		n = max(int(min(limit, 1<<30))-reserve, pebbleDefault)
	}
	return n
}

// maxAutoCacheBytes caps autoCacheBytes: with the peers' process at 65 to
// 90 MB besides its cache, and the C allocator holding up to twice what
// the cache does (a 128 MiB cache took the process to 354 MB, 250 MB with
// MALLOC_ARENA_MAX=2), it keeps the process under 300 MB.
const maxAutoCacheBytes = 80 << 20

// autoCacheBytes sizes a served store's block cache to hold its index
// blocks, a quarter more for the data blocks churning through, and
// Pebble's default beside (pebblestore.DefaultCacheBytes), up to
// maxAutoCacheBytes. The data blocks are not worth more: the fetch asks
// for each node once, in no order, so a data block cached is seldom read
// again, and a larger cache costs more a lookup than it saves
// (BenchmarkPeek in nodestore/pebblestore, at 1M entries: 3.9 to 4.5 µs a
// lookup with 8 MiB, 4.3 to 4.4 µs with 64 MiB, 5.4 µs with 128 MiB). An
// index block cached saves a read on every lookup it serves: at 19M
// entries the index (about 46 MiB) outgrew the default cache, and a lookup
// read twice from the file.
func autoCacheBytes(index int64) int64 {
	return min(pebblestore.DefaultCacheBytes+index*5/4, maxAutoCacheBytes)
}

// openOrBuild opens or builds the store in dir (see openServed), with
// Pebble's default cache.
func openOrBuild(ctx context.Context, dir string, want storeMeta, explicit bool, log io.Writer) (*servedStore, error) {
	have, err := readMeta(dir)
	switch {
	case err != nil:
		return nil, err
	case have.Complete && explicit && !have.sameSource(want):
		return nil, fmt.Errorf("%w: %s holds %s, the flags name %s (use another directory, or remove it)", errStoreMismatch, dir, have.describes(), want.describes())
	case have.Complete:
		s, err := pebblestore.Open(filepath.Join(dir, nodesDir))
		if err != nil {
			return nil, err
		}
		return &servedStore{Store: s, meta: have}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Not built, or a build cut short: start again from nothing.
	if err := os.RemoveAll(filepath.Join(dir, nodesDir)); err != nil {
		return nil, err
	}
	want.Complete = false
	if err := writeMeta(dir, want); err != nil {
		return nil, err
	}
	s, err := pebblestore.Open(filepath.Join(dir, nodesDir))
	if err != nil {
		return nil, err
	}
	meta, err := build(ctx, s, want, log)
	if err == nil {
		err = writeMeta(dir, meta)
	}
	if err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("building %s: %w", dir, err)
	}
	return &servedStore{Store: s, meta: meta}, nil
}

// build fills s with the ledger m names, merges it, and returns m
// completed with its shape. A generated ledger streams in (see
// ledger.GenerateStream): the build's memory does not grow with it.
func build(ctx context.Context, s *pebblestore.Store, m storeMeta, log io.Writer) (storeMeta, error) {
	start := time.Now()
	ld := s.NewLoader()
	defer ld.Close()
	var sum ledger.Summary
	if m.File != "" {
		l, _, err := ledger.LoadFile(m.File)
		if err != nil {
			return m, fmt.Errorf("-ledger %q: %w", m.File, err)
		}
		for h := range l.Hashes() {
			data, _ := l.Get(h)
			if err := ld.Add(h, data); err != nil {
				return m, err
			}
		}
		sum = ledger.Summary{Root: l.Root(), Leaves: l.Leaves(), Nodes: l.Len(), Size: l.Size()}
	} else {
		added := 0
		var err error
		sum, err = ledger.GenerateStream(m.Seed, m.Objects, func(h ledger.Hash, data []byte) error {
			if added++; added%(1<<20) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			return ld.Add(h, data)
		})
		if err != nil {
			return m, err
		}
	}
	if err := ld.Flush(); err != nil {
		return m, err
	}
	built := time.Since(start)
	if err := s.Compact(ctx); err != nil {
		return m, err
	}
	merged := time.Since(start) - built
	fmt.Fprintf(log, "ledgerpeer: built %s: %d objects, %d nodes, %d bytes in %v (%.0f nodes/s), merged in %v\n",
		m.describes(), sum.Leaves, sum.Nodes, sum.Size, built.Round(time.Millisecond), float64(sum.Nodes)/built.Seconds(), merged.Round(time.Millisecond))
	m.Complete, m.Root, m.Leaves, m.Nodes, m.Bytes = true, sum.Root.Hex(), sum.Leaves, sum.Nodes, sum.Size
	return m, nil
}

// readMeta reads dir's description; an empty one if there is none.
func readMeta(dir string) (storeMeta, error) {
	var m storeMeta
	b, err := os.ReadFile(filepath.Join(dir, metaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		return m, fmt.Errorf("reading %s: %w", filepath.Join(dir, metaFile), err)
	}
	return m, nil
}

// writeMeta replaces dir's description with m, atomically: a crash leaves
// the old one or the new.
func writeMeta(dir string, m storeMeta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, metaFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, metaFile))
}

// served is the ledger a ledgerpeer serves: its nodes, in memory or in a
// store, and its shape.
type served struct {
	from   tcpnet.Nodes
	root   ledger.Hash
	leaves int
	nodes  int
}

// serveWhat opens, builds or generates the ledger the flags name: from
// -store, or else in memory from -ledger or -objects and -seed. It returns
// it with what closes it, or the exit code of a failure (1 for a store
// that cannot be opened or built, 2 for flags that name no ledger), which
// it reports on stderr.
func serveWhat(ctx context.Context, fs *flag.FlagSet, storeDir string, flat bool, cacheBytes int64, file string, seed uint64, objects int, stderr io.Writer) (served, func(), int) {
	if storeDir == "" {
		var l *ledger.Ledger
		var err error
		if file != "" {
			if l, _, err = ledger.LoadFile(file); err != nil {
				err = fmt.Errorf("-ledger %q: %w", file, err)
			}
		} else {
			l, err = ledger.Generate(seed, objects)
		}
		if err != nil {
			fmt.Fprintf(stderr, "ledgerpeer: %v\n", err)
			return served{}, nil, 2
		}
		return served{from: l, root: l.Root(), leaves: l.Leaves(), nodes: l.Len()}, func() {}, 0
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	explicit := given["objects"] || given["seed"] || given["ledger"]
	want := storeMeta{File: file}
	if file == "" {
		want.Seed, want.Objects = seed, objects
	}
	if explicit {
		want = withStoreDefaults(storeDir, want, given)
	}
	var s storeServed
	var err error
	if flat {
		s, err = openFlat(ctx, storeDir, want, explicit, stderr)
	} else {
		s, err = openServed(ctx, storeDir, cacheBytes, want, explicit, stderr)
	}
	if err != nil {
		code := 1
		if errors.Is(err, errStoreMismatch) || errors.Is(err, ledger.ErrObjects) {
			code = 2
		}
		fmt.Fprintf(stderr, "ledgerpeer: -store %q: %v\n", storeDir, err)
		return served{}, nil, code
	}
	meta := s.described()
	root, err := ledger.ParseHash(meta.Root)
	if err != nil {
		_ = s.Close()
		fmt.Fprintf(stderr, "ledgerpeer: -store %q: its description's root %q: %v\n", storeDir, meta.Root, err)
		return served{}, nil, 1
	}
	closeStore := func() {
		if err := s.Close(); err != nil {
			fmt.Fprintf(stderr, "ledgerpeer: closing -store %q: %v\n", storeDir, err)
		}
	}
	return served{from: s, root: root, leaves: meta.Leaves, nodes: meta.Nodes}, closeStore, 0
}

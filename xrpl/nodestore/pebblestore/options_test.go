package pebblestore

import (
	"context"
	"strings"
	"testing"
)

// TestCacheBytes: the block cache holds what Options say, and no more;
// the zero Options hold DefaultCacheBytes; a negative size is refused.
func TestCacheBytes(t *testing.T) {
	nodes := shuffledNodes(t, 40_000) // some 15 MB: more than the default cache
	dir := t.TempDir()
	s := open(t, dir)
	if err := s.Write(nodes); err != nil {
		t.Fatal(err)
	}
	if err := s.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		opts Options
		want int64 // the cache's size after every node was read
	}{{Options{}, DefaultCacheBytes}, {Options{CacheBytes: 64 << 20}, 64 << 20}} {
		s, err := OpenWith(dir, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			if _, ok := s.Peek(n.Hash); !ok {
				t.Fatalf("%s: not found", n.Hash)
			}
		}
		held := s.db.Metrics().BlockCache.Size
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Every block read is kept while there is room: a cache larger
		// than the store's files holds them all, and one smaller is
		// nearly full (its shards each evict on their own).
		if held > c.want || held < min(c.want, 12<<20)*3/4 {
			t.Errorf("%+v: the cache held %d bytes after reading every node, want %d at most (and nearly full if smaller than the store)", c.opts, held, c.want)
		}
	}
	if _, err := OpenWith(t.TempDir(), Options{CacheBytes: -1}); err == nil || !strings.Contains(err.Error(), "a cache of -1 bytes") {
		t.Errorf("a cache of -1 bytes: %v", err)
	}
	if _, err := OpenWith(t.TempDir(), Options{OpenFiles: -1}); err == nil || !strings.Contains(err.Error(), "-1 open files") {
		t.Errorf("-1 open files: %v", err)
	}
}

// TestTables: an empty store has no files and no index; a store's index
// grows with its nodes, a few percent of them.
func TestTables(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	if files, n, err := s.Tables(); files != 0 || n != 0 || err != nil {
		t.Fatalf("empty store: %d files, %d bytes of index (%v)", files, n, err)
	}
	nodes := shuffledNodes(t, 20_000)
	size := 0
	for _, n := range nodes {
		size += len(n.Data) + len(n.Hash)
	}
	if err := s.Write(nodes); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Flush(); err != nil { // out of the memtable, into a file
		t.Fatal(err)
	}
	files, n, err := s.Tables()
	if err != nil || files < 1 || n < int64(size)/400 || n > int64(size)/20 {
		t.Fatalf("%d bytes of nodes flushed: %d files, %d bytes of index (%v), want files and 0.25%% to 5%%", size, files, n, err)
	}
}

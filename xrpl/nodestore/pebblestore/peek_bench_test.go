package pebblestore

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// BenchmarkPeek looks up the nodes of a store a peer serves, in random
// order, as a fetch asks for them: the CPU a peer spends in the store for
// each node it serves, with the fetch's small cache and with caches sized
// for a peer. It reads the store in PEBBLESTORE_PEEK_DIR (a ledgerpeer
// -store directory's nodes/, built and merged), and skips without one:
//
//	PEBBLESTORE_PEEK_DIR=/tmp/mnt1m/nodes go test -run '^$' -bench Peek -benchtime 2000000x ./xrpl/nodestore/pebblestore/
//
// Each run looks up b.N of the store's keys once each from a cold cache
// (the first lookups read every block), so give -benchtime a count near
// the store's node count to see its steady state.
func BenchmarkPeek(b *testing.B) {
	dir := os.Getenv("PEBBLESTORE_PEEK_DIR")
	if dir == "" {
		b.Skip("PEBBLESTORE_PEEK_DIR names no store to read")
	}
	keys := storeKeys(b, dir)
	if len(keys) == 0 {
		b.Fatalf("%s holds no nodes", dir)
	}
	for _, c := range []Options{
		{CacheBytes: DefaultCacheBytes}, {CacheBytes: 16 << 20}, {CacheBytes: 32 << 20}, {CacheBytes: 64 << 20}, {CacheBytes: 128 << 20},
		// Files open: Pebble's default, and fewer than the store's
		// files (a 4M store has 435; a 19M store, 2,085).
		{CacheBytes: 16 << 20, OpenFiles: 200},
	} {
		b.Run(fmt.Sprintf("cache=%dMiB/files=%d", c.CacheBytes>>20, c.OpenFiles), func(b *testing.B) {
			s, err := OpenWith(dir, c)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			i := 0
			for b.Loop() {
				if _, ok := s.Peek(keys[i%len(keys)]); !ok {
					b.Fatalf("%s: not found", keys[i%len(keys)])
				}
				i++
			}
		})
	}
}

// storeKeys returns every key of the store in dir, shuffled.
func storeKeys(b *testing.B, dir string) []ledger.Hash {
	b.Helper()
	s, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	it, err := s.db.NewIter(nil)
	if err != nil {
		b.Fatal(err)
	}
	var keys []ledger.Hash
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, ledger.Hash(it.Key()))
	}
	if err := it.Close(); err != nil {
		b.Fatal(err)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	return keys
}

package flatstore

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/nodestore/pebblestore"
)

// BenchmarkLookup looks up the nodes of a ledgerpeer -store directory in
// random order, as a fetch asks for them, from its Pebble store (Peek, as
// -flat off serves) and from its flat file (Lookup, as -flat on serves),
// in one run: the CPU a peer spends finding each node it serves. It reads
// the directory in FLATSTORE_BENCH_DIR, whose nodes.flat a ledgerpeer run
// has built, and skips without one:
//
//	FLATSTORE_BENCH_DIR=/tmp/mnt1m go test -run '^$' -bench Lookup -benchtime 1000000x ./xrpl/nodestore/flatstore/
func BenchmarkLookup(b *testing.B) {
	dir := os.Getenv("FLATSTORE_BENCH_DIR")
	if dir == "" {
		b.Skip("FLATSTORE_BENCH_DIR names no ledgerpeer -store directory")
	}
	ps, err := pebblestore.OpenWith(filepath.Join(dir, "nodes"), pebblestore.Options{CacheBytes: 64 << 20, OpenFiles: 4000})
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	var keys []ledger.Hash
	if err := ps.Scan(func(h ledger.Hash, _ []byte) error { keys = append(keys, h); return nil }); err != nil {
		b.Fatal(err)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	fs, err := Open(filepath.Join(dir, "nodes.flat"))
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	for _, c := range []struct {
		name string
		get  func(ledger.Hash) ([]byte, bool)
	}{{"pebble", ps.Peek}, {"flat", fs.Get}} {
		b.Run(c.name, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, ok := c.get(keys[i%len(keys)]); !ok {
					b.Fatalf("%s: not found", keys[i%len(keys)])
				}
				i++
			}
		})
	}
}

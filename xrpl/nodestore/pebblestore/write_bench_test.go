package pebblestore

import (
	"fmt"
	"testing"
)

// BenchmarkWrite writes a ledger's nodes in batches of a given size: the
// cost per node of the disk store, and how batching changes it.
func BenchmarkWrite(b *testing.B) {
	nodes := shuffledNodes(b, 50_000)
	for _, batch := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			for b.Loop() {
				s, err := Open(b.TempDir())
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < len(nodes); i += batch {
					if err := s.Write(nodes[i:min(i+batch, len(nodes))]); err != nil {
						b.Fatal(err)
					}
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(nodes)), "ns/node")
		})
	}
}

package ledger

import "testing"

// BenchmarkVerify measures the check a fetcher makes on every object it
// receives, on a generated ledger's nodes: a full inner node, and leaves of
// the generated sizes (all of them in turn, so the mix is the ledger's).
func BenchmarkVerify(b *testing.B) {
	l, err := Generate(1, 20_000)
	if err != nil {
		b.Fatal(err)
	}
	var inner, leaves [][]byte
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		if n, _ := Decode(data); n.Kind == Inner {
			inner = append(inner, data)
		} else {
			leaves = append(leaves, data)
		}
	}
	for _, c := range []struct {
		name  string
		nodes [][]byte
	}{{"inner", inner}, {"leaf", leaves}} {
		b.Run(c.name, func(b *testing.B) {
			names := make([]Hash, len(c.nodes))
			bytes := 0
			for i, d := range c.nodes {
				names[i] = HashOf(d)
				bytes += len(d)
			}
			b.SetBytes(int64(bytes / len(c.nodes)))
			for i := 0; b.Loop(); i++ {
				j := i % len(c.nodes)
				if !Verify(names[j], c.nodes[j]) {
					b.Fatal("does not verify")
				}
			}
		})
	}
}

package ledger_test

import (
	"fmt"

	"github.com/peersched/peersched/xrpl/ledger"
)

// A fetcher's loop, with the ledger itself standing in for the peers: ask for
// the root, check each object against the hash it was asked under, decode it
// and ask for the children of inner nodes.
func Example() {
	l, err := ledger.Generate(1, 1000)
	if err != nil {
		panic(err)
	}
	todo := []ledger.Hash{l.Root()}
	fetched, leaves := 0, 0
	for len(todo) > 0 {
		resp := l.Answer(ledger.GetObjects{Hashes: todo})
		todo = nil
		for _, obj := range resp.Items {
			if !ledger.Verify(obj.Hash, obj.Data) {
				panic("bad object " + obj.Hash.String())
			}
			node, err := ledger.Decode(obj.Data)
			if err != nil {
				panic(err)
			}
			fetched++
			if node.Kind == ledger.Leaf {
				leaves++
			}
			todo = append(todo, node.Children...)
		}
	}
	fmt.Println(fetched == l.Len(), leaves)
	// Output: true 1000
}

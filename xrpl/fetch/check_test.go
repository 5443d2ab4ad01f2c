package fetch

import (
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

func TestExamine(t *testing.T) {
	l := mustGenerate(3, 50)
	root := l.Root()
	rootData, _ := l.Get(root)
	node, err := ledger.Decode(rootData)
	if err != nil {
		t.Fatal(err)
	}
	c0, c1 := node.Children[0], node.Children[1]
	d0, _ := l.Get(c0)
	d1, _ := l.Get(c1)
	bad := append([]byte(nil), d0...)
	bad[len(bad)-1] ^= 1
	garbage := []byte("not a node")
	notNode := ledger.HashOf(garbage)

	obj := func(h ledger.Hash, d []byte) ledger.Object { return ledger.Object{Hash: h, Data: d} }
	for _, c := range []struct {
		name  string
		asked []ledger.Hash
		resp  any
		ok    bool
		want  []itemKind
	}{
		{"in order", []ledger.Hash{root, c0}, ledger.Objects{Items: []ledger.Object{obj(root, rootData), obj(c0, d0)}}, true, []itemKind{itemOK, itemOK}},
		{"pointer", []ledger.Hash{c0}, &ledger.Objects{Items: []ledger.Object{obj(c0, d0)}}, true, []itemKind{itemOK}},
		{"shuffled", []ledger.Hash{c0, c1}, ledger.Objects{Items: []ledger.Object{obj(c1, d1), obj(c0, d0)}}, true, []itemKind{itemOK, itemOK}},
		{"left out", []ledger.Hash{c0, c1}, ledger.Objects{Items: []ledger.Object{obj(c1, d1)}}, true, []itemKind{itemAbsent, itemOK}},
		{"corrupt", []ledger.Hash{c0}, ledger.Objects{Items: []ledger.Object{obj(c0, bad)}}, true, []itemKind{itemCorrupt}},
		{"corrupt then good", []ledger.Hash{c0}, ledger.Objects{Items: []ledger.Object{obj(c0, bad), obj(c0, d0)}}, true, []itemKind{itemOK}},
		{"good then corrupt", []ledger.Hash{c0}, ledger.Objects{Items: []ledger.Object{obj(c0, d0), obj(c0, bad)}}, true, []itemKind{itemOK}},
		{"another hash's bytes", []ledger.Hash{c0}, ledger.Objects{Items: []ledger.Object{obj(c0, d1)}}, true, []itemKind{itemCorrupt}},
		{"unasked items ignored", []ledger.Hash{c0}, ledger.Objects{Items: []ledger.Object{obj(c1, d1)}}, true, []itemKind{itemAbsent}},
		{"verified but not a node", []ledger.Hash{notNode}, ledger.Objects{Items: []ledger.Object{obj(notNode, garbage)}}, true, []itemKind{itemUndecodable}},
		{"wrong type", []ledger.Hash{c0}, ledger.GetObjects{Hashes: []ledger.Hash{c0}}, false, nil},
		{"nil pointer", []ledger.Hash{c0}, (*ledger.Objects)(nil), false, nil},
		{"nil", []ledger.Hash{c0}, nil, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := examine(c.asked, c.resp, nil)
			if ok != c.ok || len(got) != len(c.want) {
				t.Fatalf("ok %v with %d results, want %v with %d", ok, len(got), c.ok, len(c.want))
			}
			for i, r := range got {
				if r.hash != c.asked[i] || r.kind != c.want[i] {
					t.Errorf("result %d: hash %s kind %d, want %s kind %d", i, r.hash, r.kind, c.asked[i], c.want[i])
				}
			}
		})
	}
	got, _ := examine([]ledger.Hash{root}, ledger.Objects{Items: []ledger.Object{obj(root, rootData)}}, nil)
	if got[0].size != len(rootData) || len(got[0].children) != len(node.Children) {
		t.Errorf("root result %+v", got[0])
	}
}

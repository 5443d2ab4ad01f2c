package ledger

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// someNodes returns a few serialized nodes of each kind from a small ledger.
func someNodes(t testing.TB) (inner, leaf []byte) {
	l, err := Generate(9, 300)
	require.NoError(t, err)
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		switch data[0] {
		case tagInner:
			if inner == nil {
				inner = data
			}
		case tagLeaf:
			if leaf == nil {
				leaf = data
			}
		}
	}
	require.NotNil(t, inner)
	require.NotNil(t, leaf)
	return inner, leaf
}

func TestDecodeMalformed(t *testing.T) {
	inner, leaf := someNodes(t)
	cases := map[string][]byte{
		"empty":              {},
		"unknown tag":        {'X', 0, 1},
		"inner without body": {tagInner},
		"inner half bitmap":  {tagInner, 0},
		"inner no children":  {tagInner, 0, 0},
		"inner short":        inner[:len(inner)-1],
		"inner long":         append(bytes.Clone(inner), 0),
		"inner more bits":    append([]byte{tagInner, 0xff, 0xff}, inner[3:]...),
		"leaf short key":     leaf[:leafHeader-1],
		"tag only leaf":      {tagLeaf},
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			n, err := Decode(data)
			require.ErrorIs(t, err, ErrMalformed)
			require.Equal(t, Node{}, n)
		})
	}
}

func TestDecodeLeafWithEmptyPayload(t *testing.T) {
	data := append([]byte{tagLeaf}, bytes.Repeat([]byte{7}, HashSize)...)
	n, err := Decode(data)
	require.NoError(t, err)
	require.Equal(t, Leaf, n.Kind)
	require.Empty(t, n.Payload)
	require.Equal(t, byte(7), n.Key[31])
}

// TestTamperedFailsVerify flips every bit of a node in turn: each flip must
// fail Verify, and flipping a tag or an inner node's bitmap must also fail
// Decode or change what it decodes to.
func TestTamperedFailsVerify(t *testing.T) {
	inner, leaf := someNodes(t)
	for _, orig := range [][]byte{inner, leaf} {
		h := HashOf(orig)
		want, err := Decode(orig)
		require.NoError(t, err)
		for i := range orig {
			for bit := range 8 {
				bad := bytes.Clone(orig)
				bad[i] ^= 1 << bit
				require.False(t, Verify(h, bad), "byte %d bit %d", i, bit)
				got, err := Decode(bad)
				if err == nil {
					require.NotEqual(t, want, got, "byte %d bit %d decodes the same", i, bit)
				}
			}
		}
		require.False(t, Verify(h, orig[:len(orig)-1]), "truncated")
	}
}

func TestLeafIsNotInner(t *testing.T) {
	_, leaf := someNodes(t)
	as := bytes.Clone(leaf)
	as[0] = tagInner
	// The same bytes under the other tag are another node with another hash.
	require.NotEqual(t, HashOf(leaf), HashOf(as))
}

func TestHashString(t *testing.T) {
	h := Hash{0xde, 0xad, 0xbe, 0xef, 0x01}
	require.Equal(t, "deadbeef", h.String())
	require.Len(t, h.Hex(), 64)
	require.Equal(t, "deadbeef01", h.Hex()[:10])
	require.Equal(t, "inner", Inner.String())
	require.Equal(t, "leaf", Leaf.String())
	require.Equal(t, "Kind(9)", Kind(9).String())
}

func FuzzDecode(f *testing.F) {
	inner, leaf := someNodes(f)
	f.Add(inner)
	f.Add(leaf)
	f.Add([]byte{})
	f.Add([]byte{tagInner, 0x80, 0x01})
	f.Add([]byte{tagLeaf})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := Decode(data)
		if err != nil {
			if n.Kind != 0 {
				t.Fatalf("error %v with a node of kind %v", err, n.Kind)
			}
			return
		}
		// Whatever decodes must re-serialize to the same bytes: the layout
		// has one encoding per node, so a hash names one decoding.
		var again []byte
		switch n.Kind {
		case Inner:
			var kids [16]Hash
			i := 0
			for b := range 16 {
				if n.Branches&(1<<b) != 0 {
					kids[b] = n.Children[i]
					i++
				}
			}
			if i != len(n.Children) {
				t.Fatalf("%d children for bitmap %016b", len(n.Children), n.Branches)
			}
			again = appendInner(nil, n.Branches, &kids)
		case Leaf:
			again = append(append([]byte{tagLeaf}, n.Key[:]...), n.Payload...)
		default:
			t.Fatalf("no error and kind %v", n.Kind)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoded %x, decoded from %x", again, data)
		}
	})
}

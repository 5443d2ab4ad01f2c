package ledger

import (
	"bytes"
	"crypto/sha512"
	"testing"

	"github.com/stretchr/testify/require"
)

// someNodes returns a few serialized nodes of each kind from a small ledger.
func someNodes(t testing.TB) (inner, leaf []byte) {
	l, err := Generate(9, 300)
	require.NoError(t, err)
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		switch [4]byte(data[:4]) {
		case prefixInner:
			if inner == nil {
				inner = data
			}
		case prefixLeaf:
			if leaf == nil {
				leaf = data
			}
		}
	}
	require.NotNil(t, inner)
	require.NotNil(t, leaf)
	return inner, leaf
}

// TestHashOfIsSHA512Half: the first half of plain SHA-512, checked against
// the FIPS 180-2 test vector for "abc", and not SHA-512/256.
func TestHashOfIsSHA512Half(t *testing.T) {
	h := HashOf([]byte("abc"))
	require.Equal(t, "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a", h.Hex())
	require.NotEqual(t, sha512.Sum512_256([]byte("abc")), [32]byte(h))
}

// TestNodeLayout: the prefixes are the bytes rippled uses, every inner node
// is 516 bytes, and a leaf puts its key after its data.
func TestNodeLayout(t *testing.T) {
	require.Equal(t, []byte{0x4d, 0x49, 0x4e, 0x00}, prefixInner[:])
	require.Equal(t, []byte{0x4d, 0x4c, 0x4e, 0x00}, prefixLeaf[:])
	require.Equal(t, []byte{0x4c, 0x57, 0x52, 0x00}, prefixLedger[:])
	require.Equal(t, 516, InnerSize)

	inner, leaf := someNodes(t)
	require.Len(t, inner, InnerSize)
	n, err := Decode(leaf)
	require.NoError(t, err)
	require.Equal(t, n.Key[:], leaf[len(leaf)-HashSize:])
	require.Equal(t, n.Payload, leaf[4:len(leaf)-HashSize])
	require.Equal(t, leaf, appendLeaf(nil, n.Key, n.Payload))
}

func TestDecodeMalformed(t *testing.T) {
	inner, leaf := someNodes(t)
	emptyInner := append(prefixInner[:], make([]byte, 16*HashSize)...)
	cases := map[string][]byte{
		"empty":             {},
		"short prefix":      {'M', 'I', 'N'},
		"unknown prefix":    append([]byte("MXN\x00"), inner[4:]...),
		"prefix without 0":  append([]byte("MIN\x01"), inner[4:]...),
		"inner prefix only": prefixInner[:],
		"inner short":       inner[:len(inner)-1],
		"inner long":        append(bytes.Clone(inner), 0),
		"inner no children": emptyInner,
		"leaf short key":    leaf[:leafOverhead-1],
		"leaf prefix only":  prefixLeaf[:],
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
	data := append(prefixLeaf[:], bytes.Repeat([]byte{7}, HashSize)...)
	n, err := Decode(data)
	require.NoError(t, err)
	require.Equal(t, Leaf, n.Kind)
	require.Empty(t, n.Payload)
	require.Equal(t, byte(7), n.Key[31])
}

// TestDecodeInnerBranches: a child on branch b sets bit b, and empty
// branches (zero hashes) are left out of Children.
func TestDecodeInnerBranches(t *testing.T) {
	var kids [16]Hash
	kids[3] = Hash{1}
	kids[15] = Hash{2}
	n, err := Decode(appendInner(nil, &kids))
	require.NoError(t, err)
	require.Equal(t, Inner, n.Kind)
	require.Equal(t, uint16(1<<3|1<<15), n.Branches)
	require.Equal(t, []Hash{{1}, {2}}, n.Children)
}

// TestPayloadIsCapped: appending to a leaf's Payload must not overwrite its
// key in the shared bytes.
func TestPayloadIsCapped(t *testing.T) {
	_, leaf := someNodes(t)
	orig := bytes.Clone(leaf)
	n, err := Decode(leaf)
	require.NoError(t, err)
	_ = append(n.Payload, 0xee)
	require.Equal(t, orig, leaf)
}

// TestTamperedFailsVerify flips every bit of a node in turn: each flip must
// fail Verify, and either fail Decode or change what it decodes to.
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
	copy(as, prefixInner[:])
	// The same bytes under the other prefix are another node (or none) with
	// another hash.
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

func TestParseHash(t *testing.T) {
	h, err := ParseHash("DEADBEEF01" + string(bytes.Repeat([]byte("0"), 54)))
	require.NoError(t, err)
	require.Equal(t, Hash{0xde, 0xad, 0xbe, 0xef, 0x01}, h)
	for _, bad := range []string{"", "abc", string(bytes.Repeat([]byte("g"), 64)), string(bytes.Repeat([]byte("0"), 66))} {
		_, err := ParseHash(bad)
		require.Error(t, err, "%q", bad)
	}
}

func FuzzDecode(f *testing.F) {
	inner, leaf := someNodes(f)
	f.Add(inner)
	f.Add(leaf)
	f.Add([]byte{})
	f.Add(prefixInner[:])
	f.Add(prefixLeaf[:])
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
			again = appendInner(nil, &kids)
		case Leaf:
			again = appendLeaf(nil, n.Key, n.Payload)
		default:
			t.Fatalf("no error and kind %v", n.Kind)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("re-encoded %x, decoded from %x", again, data)
		}
	})
}

func TestAsGetObjects(t *testing.T) {
	want := GetObjects{Hashes: []Hash{{1}, {2}}}
	for _, tc := range []struct {
		name    string
		message any
		ok      bool
	}{
		{"value", want, true},
		{"pointer", &want, true},
		{"nil pointer", (*GetObjects)(nil), false},
		{"an answer", Objects{}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := AsGetObjects(tc.message)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v", ok, tc.ok)
			}
			if ok && len(got.Hashes) != 2 || !ok && got.Hashes != nil {
				t.Fatalf("got %v", got)
			}
		})
	}
}

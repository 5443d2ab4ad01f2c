package wire

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/ledger"
)

func TestGetObjectsRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 3, DefaultMaxItems} {
		m := ledger.GetObjects{Hashes: make([]ledger.Hash, n)}
		for i := range m.Hashes {
			m.Hashes[i] = h(byte(i))
		}
		p := AppendGetObjects(nil, m)
		require.Len(t, p, GetObjectsSize(m))
		got, err := DecodeGetObjects(p, 0)
		require.NoError(t, err)
		require.Len(t, got.Hashes, n)
		if n > 0 {
			require.Equal(t, m.Hashes, got.Hashes)
		}
	}
}

func TestDecodeGetObjectsErrors(t *testing.T) {
	two := AppendGetObjects(nil, ledger.GetObjects{Hashes: []ledger.Hash{h(1), h(2)}})
	cases := []struct {
		name string
		p    []byte
		max  int
		want error
	}{
		{"no count", []byte{0, 0, 0}, 0, ErrMalformed},
		{"count above limit", two, 1, ErrOversized},
		{"huge count", binary.BigEndian.AppendUint32(nil, math.MaxUint32), 0, ErrOversized},
		{"truncated", two[:len(two)-1], 0, ErrMalformed},
		{"trailing", append(bytes.Clone(two), 0), 0, ErrMalformed},
		{"count says fewer", append([]byte{0, 0, 0, 1}, two[4:]...), 0, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := DecodeGetObjects(c.p, c.max)
			require.ErrorIs(t, err, c.want)
			require.Nil(t, m.Hashes)
		})
	}
}

func TestObjectsRoundTrip(t *testing.T) {
	for _, m := range []ledger.Objects{{}, sampleObjects()} {
		p := AppendObjects([]byte("prefix"), m)
		require.Equal(t, "prefix", string(p[:6]))
		p = p[6:]
		require.Len(t, p, ObjectsSize(m))
		got, err := DecodeObjects(p, 0)
		require.NoError(t, err)
		require.Len(t, got.Items, len(m.Items))
		for i, want := range m.Items {
			g := got.Items[i]
			require.Equal(t, want.Hash, g.Hash)
			require.Equal(t, want.Missing, g.Missing)
			require.Equal(t, len(want.Data), len(g.Data))
			require.True(t, bytes.Equal(want.Data, g.Data))
			if g.Missing {
				require.Nil(t, g.Data)
			}
		}
	}
}

// TestObjectsMissingDropsData: a Missing item's Data is not sent.
func TestObjectsMissingDropsData(t *testing.T) {
	m := ledger.Objects{Items: []ledger.Object{{Hash: h(1), Missing: true, Data: []byte("ignored")}}}
	p := AppendObjects(nil, m)
	require.Len(t, p, ObjectsSize(m))
	require.Len(t, p, 4+33)
	got, err := DecodeObjects(p, 0)
	require.NoError(t, err)
	require.True(t, got.Items[0].Missing)
	require.Nil(t, got.Items[0].Data)
}

// TestDecodedDataIsCapped: appending to one item's Data must not overwrite
// the next item in the shared payload.
func TestDecodedDataIsCapped(t *testing.T) {
	p := AppendObjects(nil, sampleObjects())
	got, err := DecodeObjects(p, 0)
	require.NoError(t, err)
	_ = append(got.Items[0].Data, 0xee)
	require.Equal(t, h(2), got.Items[1].Hash)
	require.Equal(t, cap(got.Items[0].Data), len(got.Items[0].Data))
}

func TestDecodeObjectsErrors(t *testing.T) {
	good := AppendObjects(nil, sampleObjects())
	oneItem := func(tail ...byte) []byte {
		p := []byte{0, 0, 0, 1}
		p = append(p, make([]byte, 32)...)
		return append(p, tail...)
	}
	cases := []struct {
		name string
		p    []byte
		max  int
		want error
	}{
		{"empty", nil, 0, ErrMalformed},
		{"count above limit", good, 3, ErrOversized},
		{"huge count", binary.BigEndian.AppendUint32(nil, math.MaxUint32), 0, ErrOversized},
		{"count beyond bytes", binary.BigEndian.AppendUint32(nil, 100), 0, ErrMalformed},
		{"truncated", good[:len(good)-1], 0, ErrMalformed},
		{"trailing", append(bytes.Clone(good), 0), 0, ErrMalformed},
		{"bad flag", oneItem(2), 0, ErrMalformed},
		{"no size", oneItem(0, 0, 0), 0, ErrMalformed},
		{"size beyond bytes", oneItem(0, 0, 0, 0, 5, 1, 2), 0, ErrMalformed},
		{"huge size", oneItem(0, 0xff, 0xff, 0xff, 0xff), 0, ErrMalformed},
		{"second item cut", append([]byte{0, 0, 0, 2}, oneItem(1)[4:]...), 0, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := DecodeObjects(c.p, c.max)
			require.ErrorIs(t, err, c.want)
			require.Nil(t, m.Items)
		})
	}
}

// TestDecodeObjectsBoundedAllocation: a count field at the limit with a few
// bytes behind it is refused before the items slice (some 256 KiB) is made.
func TestDecodeObjectsBoundedAllocation(t *testing.T) {
	p := append(binary.BigEndian.AppendUint32(nil, DefaultMaxItems), make([]byte, 40)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 10 {
		if _, err := DecodeObjects(p, 0); err == nil {
			t.Fatal("decoded")
		}
	}
	runtime.ReadMemStats(&after)
	require.Less(t, (after.TotalAlloc-before.TotalAlloc)/10, uint64(16<<10), "bytes per decode")
}

func TestMessageRoundTrip(t *testing.T) {
	get := ledger.GetObjects{Hashes: []ledger.Hash{h(1), h(2)}}
	objs := sampleObjects()
	for _, c := range []struct {
		msg  any
		want any
		typ  Type
	}{
		{get, get, TypeGetObjects},
		{&get, get, TypeGetObjects},
		{objs, objs, TypeObjects},
		{&objs, objs, TypeObjects},
		{Ping{}, Ping{}, TypePing},
		{Pong{}, Pong{}, TypePong},
	} {
		b, err := AppendMessage(nil, 42, c.msg)
		require.NoError(t, err)
		f, err := ReadFrame(bytes.NewReader(b), 0)
		require.NoError(t, err)
		require.Equal(t, c.typ, f.Type)
		require.Equal(t, uint64(42), f.ID)
		got, err := DecodeMessage(f, 0)
		require.NoError(t, err)
		if o, ok := got.(ledger.Objects); ok {
			// Missing items decode with nil Data and present empty ones
			// with empty Data; compare what matters.
			require.Equal(t, ObjectsSize(objs), ObjectsSize(o))
			require.Equal(t, AppendObjects(nil, objs), AppendObjects(nil, o))
			continue
		}
		require.Equal(t, c.want, got)
	}
}

func TestMessageErrors(t *testing.T) {
	for _, msg := range []any{nil, "hello", 3, (*ledger.GetObjects)(nil), (*ledger.Objects)(nil), &Ping{}} {
		b, err := AppendMessage([]byte("keep"), 1, msg)
		require.ErrorIs(t, err, ErrUnknownType, "%T", msg)
		require.Equal(t, []byte("keep"), b)
	}
	for _, f := range []Frame{
		{Type: 0},
		{Type: 99},
	} {
		m, err := DecodeMessage(f, 0)
		require.ErrorIs(t, err, ErrUnknownType)
		require.Nil(t, m)
	}
	for _, f := range []Frame{
		{Type: TypePing, Payload: []byte{1}},
		{Type: TypeGetObjects, Payload: []byte{1}},
		{Type: TypeObjects, Payload: []byte{1}},
	} {
		m, err := DecodeMessage(f, 0)
		require.ErrorIs(t, err, ErrMalformed)
		require.Nil(t, m, "a failed decode returns no message")
	}
}

// FuzzDecodeObjects: never panic, and whatever decodes re-encodes to the
// same bytes (one encoding per value, so a payload cannot mean two things).
func FuzzDecodeObjects(f *testing.F) {
	f.Add(AppendObjects(nil, sampleObjects()))
	f.Add(AppendObjects(nil, ledger.Objects{}))
	f.Add([]byte{0, 0, 0, 1})
	f.Add(binary.BigEndian.AppendUint32(nil, math.MaxUint32))
	f.Add(append([]byte{0, 0, 0, 1}, make([]byte, 37)...))
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := DecodeObjects(p, 64)
		if err != nil {
			if m.Items != nil {
				t.Fatalf("error %v with items", err)
			}
			return
		}
		if len(m.Items) > 64 {
			t.Fatalf("%d items past the limit", len(m.Items))
		}
		if again := AppendObjects(nil, m); !bytes.Equal(again, p) {
			t.Fatalf("re-encoded %x", again)
		}
		if ObjectsSize(m) != len(p) {
			t.Fatalf("ObjectsSize %d for %d bytes", ObjectsSize(m), len(p))
		}
	})
}

func FuzzDecodeGetObjects(f *testing.F) {
	f.Add(AppendGetObjects(nil, ledger.GetObjects{Hashes: []ledger.Hash{h(1)}}))
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		m, err := DecodeGetObjects(p, 64)
		if err != nil {
			return
		}
		if again := AppendGetObjects(nil, m); !bytes.Equal(again, p) {
			t.Fatalf("re-encoded %x", again)
		}
	})
}

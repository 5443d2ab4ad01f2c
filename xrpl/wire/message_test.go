package wire

import (
	"bytes"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire/internal/protocol"
)

// roundTrip encodes msg under id, reads the frame back and decodes it.
func roundTrip(t *testing.T, id uint64, msg any) (Type, uint64, any) {
	t.Helper()
	b, err := AppendMessage(nil, id, msg)
	require.NoError(t, err)
	require.Len(t, b, MessageSize(id, msg))
	f, err := ReadFrame(bytes.NewReader(b), 0)
	require.NoError(t, err)
	gotID, got, err := DecodeMessage(f, 0)
	require.NoError(t, err)
	return f.Type, gotID, got
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
		{ledger.GetObjects{}, ledger.GetObjects{Hashes: []ledger.Hash{}}, TypeGetObjects},
		{objs, objs, TypeGetObjects},
		{&objs, objs, TypeGetObjects},
		{ledger.Objects{}, ledger.Objects{Items: []ledger.Object{}}, TypeGetObjects},
		{Ping{}, Ping{}, TypePing},
		{Pong{}, Pong{}, TypePing},
	} {
		for _, id := range []uint64{0, 42, 1 << 24, math.MaxUint32} {
			typ, gotID, got := roundTrip(t, id, c.msg)
			require.Equal(t, c.typ, typ)
			require.Equal(t, id, gotID)
			require.Equal(t, c.want, got, "%T under %d", c.msg, id)
		}
	}
}

// TestMessageIsTMGetObjectByHash decodes what AppendMessage wrote with the
// generated protobuf code itself: the fields rippled reads are where it
// reads them.
func TestMessageIsTMGetObjectByHash(t *testing.T) {
	b, err := AppendMessage(nil, 0xfedcba98, ledger.GetObjects{Hashes: []ledger.Hash{h(7)}})
	require.NoError(t, err)
	var q protocol.TMGetObjectByHash
	require.NoError(t, proto.Unmarshal(b[HeaderSize:], &q))
	require.Equal(t, protocol.TMGetObjectByHash_otSTATE_NODE, q.GetType())
	require.True(t, q.GetQuery())
	require.Equal(t, uint32(0xfedcba98), q.GetSeq())
	require.Len(t, q.GetObjects(), 1)
	require.Equal(t, hb(7), q.GetObjects()[0].GetHash())
	require.Nil(t, q.GetObjects()[0].Data, "a query carries no data")

	b, err = AppendMessage(nil, 9, sampleObjects())
	require.NoError(t, err)
	var r protocol.TMGetObjectByHash
	require.NoError(t, proto.Unmarshal(b[HeaderSize:], &r))
	require.False(t, r.GetQuery())
	require.Equal(t, uint32(9), r.GetSeq())
	require.Equal(t, []byte("first object"), r.GetObjects()[0].GetData())

	// Field numbers, byte by byte: type (1) = 4, query (2) = 1, seq (3),
	// objects (6) holding hash (1).
	var want []byte
	want = protowire.AppendTag(want, 1, protowire.VarintType)
	want = protowire.AppendVarint(want, 4)
	want = protowire.AppendTag(want, 2, protowire.VarintType)
	want = protowire.AppendVarint(want, 1)
	want = protowire.AppendTag(want, 3, protowire.VarintType)
	want = protowire.AppendVarint(want, 300)
	var obj []byte
	obj = protowire.AppendTag(obj, 1, protowire.BytesType)
	obj = protowire.AppendBytes(obj, hb(1))
	want = protowire.AppendTag(want, 6, protowire.BytesType)
	want = protowire.AppendBytes(want, obj)
	b, err = AppendMessage(nil, 300, ledger.GetObjects{Hashes: []ledger.Hash{h(1)}})
	require.NoError(t, err)
	require.Equal(t, want, b[HeaderSize:])
}

// TestDecodeForeignReply: a reply as another implementation may write it,
// with fields this package does not set (nodeID, index, ledgerSeq, the
// ledger hash, fat), decodes to its objects.
func TestDecodeForeignReply(t *testing.T) {
	m := &protocol.TMGetObjectByHash{
		Type:       protocol.TMGetObjectByHash_otSTATE_NODE.Enum(),
		Query:      proto.Bool(false),
		Seq:        proto.Uint32(77),
		LedgerHash: hb(5),
		Objects: []*protocol.TMIndexedObject{
			{Hash: hb(1), Data: []byte("abc"), NodeID: []byte{1, 2}, Index: hb(9), LedgerSeq: proto.Uint32(38129)},
		},
	}
	payload, err := proto.Marshal(m)
	require.NoError(t, err)
	payload = protowire.AppendTag(payload, 5, protowire.VarintType) // fat, which our proto leaves out
	payload = protowire.AppendVarint(payload, 1)
	id, msg, err := DecodeMessage(Frame{Type: TypeGetObjects, Payload: payload}, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(77), id)
	require.Equal(t, ledger.Objects{Items: []ledger.Object{{Hash: h(1), Data: []byte("abc")}}}, msg)
}

func TestAppendMessageErrors(t *testing.T) {
	for _, msg := range []any{nil, "hello", 3, (*ledger.GetObjects)(nil), (*ledger.Objects)(nil), &Ping{}} {
		b, err := AppendMessage([]byte("keep"), 1, msg)
		require.ErrorIs(t, err, ErrUnknownType, "%T", msg)
		require.Equal(t, []byte("keep"), b)
		require.Zero(t, MessageSize(1, msg))
	}
	for _, id := range []uint64{math.MaxUint32 + 1, math.MaxUint64} {
		b, err := AppendMessage([]byte("keep"), id, ledger.GetObjects{})
		require.ErrorIs(t, err, ErrIDRange)
		require.Equal(t, []byte("keep"), b)
	}
	huge := ledger.Objects{Items: []ledger.Object{{Hash: h(1), Data: make([]byte, MaxPayload)}}}
	_, err := AppendMessage(nil, 1, huge)
	require.ErrorIs(t, err, ErrOversized)
	_, err = AppendReply(nil, 1, huge, Echo{})
	require.ErrorIs(t, err, ErrOversized)
	require.Zero(t, MessageSize(1, huge), "a message AppendMessage refuses has no size")
	require.Zero(t, ReplySize(1, huge, Echo{}), "a reply AppendReply refuses has no size")
}

// payloadOf marshals m with the generated code, for hand-made bad messages.
func payloadOf(t *testing.T, m proto.Message) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{AllowPartial: true}.Marshal(m)
	require.NoError(t, err)
	return b
}

func TestDecodeMessageErrors(t *testing.T) {
	stateNode := protocol.TMGetObjectByHash_otSTATE_NODE.Enum()
	many := &protocol.TMGetObjectByHash{Type: stateNode, Query: proto.Bool(true)}
	for range 11 {
		many.Objects = append(many.Objects, &protocol.TMIndexedObject{Hash: hb(1)})
	}
	cases := []struct {
		name string
		f    Frame
		want error
	}{
		{"unknown type", Frame{Type: 99}, ErrUnknownType},
		{"not protobuf", Frame{Type: TypeGetObjects, Payload: []byte{0xff}}, ErrMalformed},
		{"empty (required fields unset)", Frame{Type: TypeGetObjects}, ErrMalformed},
		{"no query flag", Frame{Type: TypeGetObjects, Payload: payloadOf(t, &protocol.TMGetObjectByHash{Type: stateNode})}, ErrMalformed},
		{"not state nodes", Frame{Type: TypeGetObjects, Payload: payloadOf(t, &protocol.TMGetObjectByHash{
			Type: protocol.TMGetObjectByHash_otTRANSACTION_NODE.Enum(), Query: proto.Bool(true)})}, ErrMalformed},
		{"short hash", Frame{Type: TypeGetObjects, Payload: payloadOf(t, &protocol.TMGetObjectByHash{
			Type: stateNode, Query: proto.Bool(false), Objects: []*protocol.TMIndexedObject{{Hash: []byte{1, 2}, Data: []byte{3}}}})}, ErrMalformed},
		{"too many objects", Frame{Type: TypeGetObjects, Payload: payloadOf(t, many)}, ErrOversized},
		{"ping without type", Frame{Type: TypePing, Payload: payloadOf(t, &protocol.TMPing{Seq: proto.Uint32(1)})}, ErrMalformed},
		{"ping not protobuf", Frame{Type: TypePing, Payload: []byte{0x0a}}, ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, m, err := DecodeMessage(c.f, 10)
			require.ErrorIs(t, err, c.want)
			require.Nil(t, m, "a failed decode returns no message")
			require.Zero(t, id)
		})
	}
}

// TestDecodeBoundedAllocation: a payload of the most objects the frame cap
// allows, each two bytes on the wire, is refused by its count before
// protobuf allocates a struct for each.
func TestDecodeBoundedAllocation(t *testing.T) {
	var p []byte
	for range DefaultMaxFrame / 2 {
		p = protowire.AppendTag(p, objectsField, protowire.BytesType)
		p = protowire.AppendVarint(p, 0)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, _, err := DecodeMessage(Frame{Type: TypeGetObjects, Payload: p}, 0)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrOversized)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
}

// FuzzDecodeMessage: never panic, fail only with the package's errors, and
// whatever decodes encodes again to a frame that decodes to the same ID and
// value (protobuf allows several encodings of one message, so the bytes may
// differ).
func FuzzDecodeMessage(f *testing.F) {
	for _, m := range []any{sampleObjects(), ledger.GetObjects{Hashes: []ledger.Hash{h(2)}}, Ping{}, Pong{}, ledger.Objects{}} {
		b, _ := AppendMessage(nil, 1<<24+5, m)
		f.Add(uint16(b[5]), b[HeaderSize:])
	}
	f.Add(uint16(42), []byte{0x08, 0x04, 0x10, 0x01, 0x32, 0x00})
	f.Add(uint16(3), []byte{0x08, 0x07})
	f.Fuzz(func(t *testing.T, typ uint16, payload []byte) {
		id, msg, err := DecodeMessage(Frame{Type: Type(typ), Payload: payload}, 64)
		if err != nil {
			if msg != nil || id != 0 {
				t.Fatalf("error %v with id %d and %T", err, id, msg)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOversized) && !errors.Is(err, ErrUnknownType) {
				t.Fatalf("error outside the classes: %v", err)
			}
			return
		}
		if id > MaxID {
			t.Fatalf("id %d above 32 bits", id)
		}
		b, err := AppendMessage(nil, id, msg)
		if err != nil {
			t.Fatalf("decoded %T does not encode: %v", msg, err)
		}
		fr, err := ReadFrame(bytes.NewReader(b), 0)
		if err != nil {
			t.Fatal(err)
		}
		id2, msg2, err := DecodeMessage(fr, 64)
		if err != nil || id2 != id {
			t.Fatalf("re-decoded: id %d, %v", id2, err)
		}
		if again, _ := AppendMessage(nil, id2, msg2); !bytes.Equal(again, b) {
			t.Fatalf("second encoding differs: %x then %x", b, again)
		}
	})
}

// hb is h(b) as a slice.
func hb(b byte) []byte {
	x := h(b)
	return x[:]
}

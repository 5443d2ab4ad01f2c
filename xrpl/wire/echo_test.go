package wire

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire/internal/protocol"
)

// replyTo decodes the query payload q with DecodeRequest, answers it with
// objects through AppendReply and returns the reply as protobuf.
func replyTo(t *testing.T, q *protocol.TMGetObjectByHash, objects ledger.Objects) *protocol.TMGetObjectByHash {
	t.Helper()
	id, msg, echo, err := DecodeRequest(Frame{Type: TypeGetObjects, Payload: payloadOf(t, q)}, 0)
	require.NoError(t, err)
	require.IsType(t, ledger.GetObjects{}, msg)
	b, err := AppendReply(nil, id, objects, echo)
	require.NoError(t, err)
	require.Len(t, b, ReplySize(id, objects, echo))
	f, err := ReadFrame(bytes.NewReader(b), 0)
	require.NoError(t, err)
	var m protocol.TMGetObjectByHash
	require.NoError(t, proto.Unmarshal(f.Payload, &m))
	return &m
}

// TestReplyEchoesItsQuery: as rippled's, a reply echoes ledgerHash, copies
// each object's nodeID into its index and its ledgerSeq, and omits seq when
// the query had none.
func TestReplyEchoesItsQuery(t *testing.T) {
	stateNode := protocol.TMGetObjectByHash_otSTATE_NODE.Enum()
	ledgerHash := bytes.Repeat([]byte{0x5a}, 32)
	q := &protocol.TMGetObjectByHash{
		Type: stateNode, Query: proto.Bool(true), LedgerHash: ledgerHash,
		Objects: []*protocol.TMIndexedObject{
			{Hash: hb(1), NodeID: []byte("node one"), LedgerSeq: proto.Uint32(38129)},
			{Hash: hb(2)},
			{Hash: hb(3), LedgerSeq: proto.Uint32(7)},
		},
	}
	objects := ledger.Objects{Items: []ledger.Object{
		{Hash: ledger.Hash(hb(1)), Data: []byte("a")},
		{Hash: ledger.Hash(hb(2)), Data: []byte("b")},
		{Hash: ledger.Hash(hb(3)), Data: []byte("c")},
	}}
	m := replyTo(t, q, objects)
	require.Nil(t, m.Seq, "the query had no seq")
	require.False(t, m.GetQuery())
	require.Equal(t, ledgerHash, m.GetLedgerHash())
	require.Len(t, m.Objects, 3)
	require.Equal(t, []byte("node one"), m.Objects[0].GetIndex())
	require.Equal(t, uint32(38129), m.Objects[0].GetLedgerSeq())
	require.Nil(t, m.Objects[1].Index)
	require.Nil(t, m.Objects[1].LedgerSeq)
	require.Nil(t, m.Objects[2].Index)
	require.Equal(t, uint32(7), m.Objects[2].GetLedgerSeq())

	// A query with a seq and nothing else: the plain reply, seq and all.
	q = &protocol.TMGetObjectByHash{Type: stateNode, Query: proto.Bool(true), Seq: proto.Uint32(1 << 24),
		Objects: []*protocol.TMIndexedObject{{Hash: hb(1)}}}
	m = replyTo(t, q, objects)
	require.Equal(t, uint32(1<<24), m.GetSeq())
	require.NotNil(t, m.Seq)
	require.Nil(t, m.LedgerHash)
	plain, err := AppendMessage(nil, 1<<24, objects)
	require.NoError(t, err)
	withEcho, err := AppendReply(nil, 1<<24, objects, Echo{})
	require.NoError(t, err)
	require.Equal(t, plain, withEcho, "the zero Echo is AppendMessage's reply")
}

// TestDecodeRequestOtherwise: for anything but a query, DecodeRequest is
// DecodeMessage with a zero Echo.
func TestDecodeRequestOtherwise(t *testing.T) {
	for _, msg := range []any{Ping{}, sampleObjects()} {
		b, err := AppendMessage(nil, 9, msg)
		require.NoError(t, err)
		f, err := ReadFrame(bytes.NewReader(b), 0)
		require.NoError(t, err)
		id, got, echo, err := DecodeRequest(f, 0)
		require.NoError(t, err)
		require.Equal(t, uint64(9), id)
		require.Equal(t, msg, got)
		require.Equal(t, Echo{}, echo)
	}
	_, _, _, err := DecodeRequest(Frame{Type: TypeGetObjects, Payload: []byte{0xff}}, 0)
	require.ErrorIs(t, err, ErrMalformed)
}

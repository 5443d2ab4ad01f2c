package wire

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire/internal/protocol"
)

// Echo is what a reply to a TMGetObjectByHash query copies from the query,
// as rippled's does: the query's ledgerHash, and for each object asked, its
// nodeID (into the reply object's index) and its ledgerSeq; and a reply
// carries seq only when its query had one. The zero Echo is that of a query
// with a seq and nothing else, which is what this package's own queries are:
// its reply is AppendMessage's.
type Echo struct {
	// NoSeq says the query had no seq: the reply carries none either.
	NoSeq bool
	// LedgerHash is the query's ledgerHash, nil if it had none.
	LedgerHash []byte
	// Objects holds, by hash, the nodeID and ledgerSeq of the objects
	// asked with either; nil if none had them.
	Objects map[ledger.Hash]EchoObject
}

// EchoObject is what one object's reply copies from how it was asked.
type EchoObject struct {
	NodeID    []byte  // copied into the reply object's index; nil if none
	LedgerSeq *uint32 // copied into its ledgerSeq; nil if none
}

// DecodeRequest is DecodeMessage, and for a TMGetObjectByHash query also
// returns what its reply must echo (see Echo); for anything else the Echo is
// zero. Its errors are DecodeMessage's.
func DecodeRequest(f Frame, maxItems int) (id uint64, msg any, echo Echo, err error) {
	if f.Type != TypeGetObjects {
		id, msg, err = DecodeMessage(f, maxItems)
		return id, msg, Echo{}, err
	}
	m, err := unmarshalGetObjects(f.Payload, maxItems)
	if err != nil {
		return 0, nil, Echo{}, err
	}
	id, msg = getObjectsValue(m)
	if m.GetQuery() {
		echo = echoOf(m)
	}
	return id, msg, echo, nil
}

// echoOf returns what a reply to the query m must echo.
func echoOf(m *protocol.TMGetObjectByHash) Echo {
	e := Echo{NoSeq: m.Seq == nil, LedgerHash: m.GetLedgerHash()}
	for _, o := range m.GetObjects() {
		if o.NodeID == nil && o.LedgerSeq == nil {
			continue
		}
		if e.Objects == nil {
			e.Objects = map[ledger.Hash]EchoObject{}
		}
		e.Objects[ledger.Hash(o.GetHash())] = EchoObject{NodeID: o.GetNodeID(), LedgerSeq: o.LedgerSeq}
	}
	return e
}

// AppendReply appends a whole frame carrying the reply r to a query with
// request ID id that asked as e says: AppendMessage's frame, with e's fields
// echoed. It fails as AppendMessage does.
func AppendReply(dst []byte, id uint64, r ledger.Objects, e Echo) ([]byte, error) {
	m, err := replyMessage(id, r, e)
	if err != nil {
		return dst, err
	}
	size := proto.Size(m)
	if err := checkFrame(TypeGetObjects, size); err != nil {
		return dst, err
	}
	out := appendHeader(dst, TypeGetObjects, size)
	out, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(out, m)
	if err != nil {
		return dst, fmt.Errorf("wire: encoding a reply: %w", err)
	}
	return out, nil
}

// ReplySize returns the size of the frame AppendReply would write, or 0 if
// it cannot encode it.
func ReplySize(id uint64, r ledger.Objects, e Echo) int {
	m, err := replyMessage(id, r, e)
	if err != nil {
		return 0
	}
	size := proto.Size(m)
	if checkFrame(TypeGetObjects, size) != nil {
		return 0 // oversized: AppendReply refuses it
	}
	return HeaderSize + size
}

// replyMessage is the TMGetObjectByHash reply r under id, echoing e.
func replyMessage(id uint64, r ledger.Objects, e Echo) (*protocol.TMGetObjectByHash, error) {
	_, pm, err := message(id, r)
	if err != nil {
		return nil, err
	}
	m := pm.(*protocol.TMGetObjectByHash)
	if e.NoSeq {
		m.Seq = nil
	}
	m.LedgerHash = e.LedgerHash
	if e.Objects != nil {
		for _, o := range m.Objects {
			if eo, ok := e.Objects[ledger.Hash(o.Hash)]; ok {
				o.Index, o.LedgerSeq = eo.NodeID, eo.LedgerSeq
			}
		}
	}
	return m, nil
}

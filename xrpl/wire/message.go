package wire

import (
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/wire/internal/protocol"
)

// Ping and Pong are the Go values of a TMPing frame, ptPING and ptPONG. Hosts
// use them to measure round trips and keep idle connections alive, outside
// the scheduler if they like; a Pong carries its Ping's seq.
type (
	Ping struct{}
	Pong struct{}
)

// MaxID is the largest request ID a message carries: TMGetObjectByHash.seq
// and TMPing.seq are uint32s.
const MaxID = math.MaxUint32

// DefaultMaxItems is the object limit DecodeMessage applies when given zero
// or less: hashes per query, objects per reply.
const DefaultMaxItems = 4096

// objectsField is TMGetObjectByHash's field number of its objects, which
// DecodeMessage counts before it lets protobuf allocate them.
const objectsField protowire.Number = 6

// AppendMessage appends a whole frame carrying msg under request ID id. msg
// is a ledger.GetObjects (sent as a TMGetObjectByHash query for state nodes),
// a ledger.Objects (its reply), either as a non-nil pointer, or a Ping or a
// Pong (a TMPing); id goes in the message's seq. msg may also be a Frame of
// a type this package frames (a notification such as a TypeStatusChange,
// with its payload already encoded), which is written as it is, id unused.
// It fails, leaving dst as it was, with ErrIDRange for an id above MaxID,
// ErrUnknownType for any other value and ErrOversized if the message does
// not fit a frame.
func AppendMessage(dst []byte, id uint64, msg any) ([]byte, error) {
	if f, ok := msg.(Frame); ok {
		if err := checkFrame(f.Type, len(f.Payload)); err != nil {
			return dst, err
		}
		return append(appendHeader(dst, f.Type, len(f.Payload)), f.Payload...), nil
	}
	t, m, err := message(id, msg)
	if err != nil {
		return dst, err
	}
	size := proto.Size(m)
	if err := checkFrame(t, size); err != nil {
		return dst, err
	}
	out := appendHeader(dst, t, size)
	out, err = proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(out, m)
	if err != nil {
		// Only a required field left unset fails, and message sets them.
		return dst, fmt.Errorf("wire: encoding %T: %w", msg, err)
	}
	return out, nil
}

// MessageSize returns the size of the frame AppendMessage would write for msg
// under id, or 0 if it cannot encode it. Simulated networks use it to charge
// a response's bandwidth as TCP would.
func MessageSize(id uint64, msg any) int {
	if f, ok := msg.(Frame); ok {
		if checkFrame(f.Type, len(f.Payload)) != nil {
			return 0
		}
		return HeaderSize + len(f.Payload)
	}
	t, m, err := message(id, msg)
	if err != nil {
		return 0
	}
	size := proto.Size(m)
	if checkFrame(t, size) != nil {
		return 0 // oversized: AppendMessage refuses it
	}
	return HeaderSize + size
}

// message returns the frame type and protobuf message that carry msg under
// id.
func message(id uint64, msg any) (Type, proto.Message, error) {
	if id > MaxID {
		return 0, nil, fmt.Errorf("%w: %d", ErrIDRange, id)
	}
	seq := proto.Uint32(uint32(id))
	switch m := msg.(type) {
	case ledger.GetObjects:
		objects := make([]*protocol.TMIndexedObject, len(m.Hashes))
		for i := range m.Hashes {
			objects[i] = &protocol.TMIndexedObject{Hash: m.Hashes[i][:]}
		}
		return TypeGetObjects, stateNodes(true, seq, objects), nil
	case *ledger.GetObjects:
		if m != nil {
			return message(id, *m)
		}
	case ledger.Objects:
		objects := make([]*protocol.TMIndexedObject, len(m.Items))
		for i := range m.Items {
			it := &m.Items[i]
			data := it.Data
			if data == nil {
				data = []byte{} // present, if empty: it fails Verify at the other end
			}
			objects[i] = &protocol.TMIndexedObject{Hash: it.Hash[:], Data: data}
		}
		return TypeGetObjects, stateNodes(false, seq, objects), nil
	case *ledger.Objects:
		if m != nil {
			return message(id, *m)
		}
	case Ping:
		return TypePing, &protocol.TMPing{Type: protocol.TMPing_ptPING.Enum(), Seq: seq}, nil
	case Pong:
		return TypePing, &protocol.TMPing{Type: protocol.TMPing_ptPONG.Enum(), Seq: seq}, nil
	}
	return 0, nil, fmt.Errorf("%w: Go type %T", ErrUnknownType, msg)
}

func stateNodes(query bool, seq *uint32, objects []*protocol.TMIndexedObject) *protocol.TMGetObjectByHash {
	return &protocol.TMGetObjectByHash{
		Type:    protocol.TMGetObjectByHash_otSTATE_NODE.Enum(),
		Query:   proto.Bool(query),
		Seq:     seq,
		Objects: objects,
	}
}

// DecodeMessage decodes f's payload into the request ID it carries (its seq;
// 0 if it has none) and the Go value of its message: a ledger.GetObjects for
// a TMGetObjectByHash query, a ledger.Objects for a reply (objects the peer
// lacks are left out of it, as rippled does), or a Ping or Pong for a TMPing
// (values, not pointers). Data in a decoded Objects is the decoder's own
// copy.
//
// maxItems limits the objects of a TMGetObjectByHash (zero or less means
// DefaultMaxItems); they are counted before anything is allocated for them,
// and more is an error wrapping ErrOversized. A payload that is not its
// type's message, a hash that is not 32 bytes, or an object type other than
// state nodes is ErrMalformed; a type it does not know, ErrUnknownType. A
// failed decode returns no message.
func DecodeMessage(f Frame, maxItems int) (id uint64, msg any, err error) {
	switch f.Type {
	case TypeGetObjects:
		return decodeGetObjects(f.Payload, maxItems)
	case TypePing:
		var m protocol.TMPing
		if err := proto.Unmarshal(f.Payload, &m); err != nil {
			return 0, nil, fmt.Errorf("%w: TMPing: %v", ErrMalformed, err)
		}
		switch m.GetType() {
		case protocol.TMPing_ptPING:
			return uint64(m.GetSeq()), Ping{}, nil
		case protocol.TMPing_ptPONG:
			return uint64(m.GetSeq()), Pong{}, nil
		}
		return 0, nil, fmt.Errorf("%w: TMPing of type %d", ErrMalformed, m.GetType())
	}
	return 0, nil, fmt.Errorf("%w: %d", ErrUnknownType, uint16(f.Type))
}

func decodeGetObjects(p []byte, maxItems int) (uint64, any, error) {
	m, err := unmarshalGetObjects(p, maxItems)
	if err != nil {
		return 0, nil, err
	}
	id, msg := getObjectsValue(m)
	return id, msg, nil
}

// unmarshalGetObjects decodes and checks a TMGetObjectByHash payload,
// counting its objects before protobuf allocates them.
func unmarshalGetObjects(p []byte, maxItems int) (*protocol.TMGetObjectByHash, error) {
	if maxItems <= 0 {
		maxItems = DefaultMaxItems
	}
	n, err := countObjects(p)
	if err != nil {
		return nil, err
	}
	if n > maxItems {
		return nil, fmt.Errorf("%w: %d objects, limit %d", ErrOversized, n, maxItems)
	}
	var m protocol.TMGetObjectByHash
	if err := proto.Unmarshal(p, &m); err != nil {
		return nil, fmt.Errorf("%w: TMGetObjectByHash: %v", ErrMalformed, err)
	}
	if m.GetType() != protocol.TMGetObjectByHash_otSTATE_NODE {
		return nil, fmt.Errorf("%w: objects of type %v, want state nodes", ErrMalformed, m.GetType())
	}
	for i, o := range m.GetObjects() {
		if len(o.GetHash()) != ledger.HashSize {
			return nil, fmt.Errorf("%w: object %d has a %d-byte hash", ErrMalformed, i, len(o.GetHash()))
		}
	}
	return &m, nil
}

// getObjectsValue returns the request ID and Go value of a checked
// TMGetObjectByHash: a ledger.GetObjects for a query, a ledger.Objects for a
// reply.
func getObjectsValue(m *protocol.TMGetObjectByHash) (uint64, any) {
	objects := m.GetObjects()
	id := uint64(m.GetSeq())
	if m.GetQuery() {
		q := ledger.GetObjects{Hashes: make([]ledger.Hash, len(objects))}
		for i, o := range objects {
			q.Hashes[i] = ledger.Hash(o.GetHash())
		}
		return id, q
	}
	r := ledger.Objects{Items: make([]ledger.Object, len(objects))}
	for i, o := range objects {
		r.Items[i] = ledger.Object{Hash: ledger.Hash(o.GetHash()), Data: o.GetData()}
	}
	return id, r
}

// countObjects walks p's top-level fields and counts the objects, so that a
// payload of many tiny objects (two bytes each on the wire, a hundred or so
// once decoded) is refused before protobuf allocates them. A payload that
// does not parse as protobuf fields is ErrMalformed.
func countObjects(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		num, typ, size := protowire.ConsumeField(p)
		if size < 0 {
			return 0, fmt.Errorf("%w: TMGetObjectByHash: %v", ErrMalformed, protowire.ParseError(size))
		}
		if num == objectsField && typ == protowire.BytesType {
			n++
		}
		p = p[size:]
	}
	return n, nil
}

package wire

import (
	"fmt"

	"github.com/peersched/peersched/ledger"
)

// Ping and Pong are the Go values of TypePing and TypePong frames.
type (
	Ping struct{}
	Pong struct{}
)

// AppendMessage appends a whole frame carrying msg under request ID id. msg
// is a ledger.GetObjects or ledger.Objects (or a non-nil pointer to one), a
// Ping or a Pong. It fails, leaving dst as it was, with ErrUnknownType for any
// other value and ErrOversized if the frame would not fit the length field.
func AppendMessage(dst []byte, id uint64, msg any) ([]byte, error) {
	var t Type
	var size int
	switch m := msg.(type) {
	case ledger.GetObjects:
		t, size = TypeGetObjects, GetObjectsSize(m)
	case *ledger.GetObjects:
		if m == nil {
			break
		}
		return AppendMessage(dst, id, *m)
	case ledger.Objects:
		t, size = TypeObjects, ObjectsSize(m)
	case *ledger.Objects:
		if m == nil {
			break
		}
		return AppendMessage(dst, id, *m)
	case Ping:
		t = TypePing
	case Pong:
		t = TypePong
	}
	if t == 0 {
		return dst, fmt.Errorf("%w: Go type %T", ErrUnknownType, msg)
	}
	if err := checkFrame(t, size); err != nil {
		return dst, err
	}
	dst = appendHeader(dst, t, id, size)
	switch m := msg.(type) {
	case ledger.GetObjects:
		dst = AppendGetObjects(dst, m)
	case ledger.Objects:
		dst = AppendObjects(dst, m)
	}
	return dst, nil
}

// DecodeMessage decodes f's payload into the Go value of its type: a
// ledger.GetObjects, ledger.Objects, Ping or Pong (values, not pointers).
// maxItems limits the hashes or items of a payload as in DecodeGetObjects
// and DecodeObjects, whose errors it returns; a type it does not know gives
// ErrUnknownType. Data in a decoded Objects aliases f.Payload.
func DecodeMessage(f Frame, maxItems int) (any, error) {
	switch f.Type {
	case TypeGetObjects:
		m, err := DecodeGetObjects(f.Payload, maxItems)
		if err != nil {
			return nil, err
		}
		return m, nil
	case TypeObjects:
		m, err := DecodeObjects(f.Payload, maxItems)
		if err != nil {
			return nil, err
		}
		return m, nil
	case TypePing, TypePong:
		if len(f.Payload) != 0 {
			return nil, fmt.Errorf("%w: %v with a %d-byte payload", ErrMalformed, f.Type, len(f.Payload))
		}
		if f.Type == TypePing {
			return Ping{}, nil
		}
		return Pong{}, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknownType, uint8(f.Type))
}

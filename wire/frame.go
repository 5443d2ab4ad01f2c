// Package wire is the TCP encoding of the fetch protocol: length-prefixed
// frames, and the payload codecs for the messages of package ledger.
//
// A frame is
//
//	length uint32 | type uint8 | request ID uint64 | payload
//
// all integers big-endian, where length counts everything after itself (so it
// is at least 9). A connection owner reads frames with ReadFrame, which
// refuses an oversized length before allocating anything for it; any error
// from ReadFrame means the stream can no longer be trusted to be in step and
// the connection should be closed.
//
// The package imports ledger for its message types (ledger.Hash is a
// [32]byte, ledger imports nothing outside the standard library) so that one
// set of Go values, not two kept in step by hand, travels through simulated
// and real networks alike, and a TCP host passes decoded messages straight to
// the scheduler without converting them.
//
// Everything here is a pure function of its arguments and safe for
// concurrent use.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Type says what a frame's payload is.
type Type uint8

// The frame types.
const (
	// TypeGetObjects carries a ledger.GetObjects request (see AppendGetObjects).
	TypeGetObjects Type = 1
	// TypeObjects carries a ledger.Objects response (see AppendObjects).
	TypeObjects Type = 2
	// TypePing asks the other side for a TypePong with the same ID; both
	// have empty payloads. Hosts use them to measure round trips and keep
	// idle connections alive, outside the scheduler if they like.
	TypePing Type = 3
	// TypePong answers a TypePing.
	TypePong Type = 4
)

func (t Type) String() string {
	switch t {
	case TypeGetObjects:
		return "GetObjects"
	case TypeObjects:
		return "Objects"
	case TypePing:
		return "Ping"
	case TypePong:
		return "Pong"
	}
	return fmt.Sprintf("Type(%d)", uint8(t))
}

func (t Type) known() bool { return t >= TypeGetObjects && t <= TypePong }

// Sizes and default limits.
const (
	// HeaderSize is the bytes before a frame's payload: length, type, ID.
	HeaderSize = 4 + 1 + 8
	// MinLength is the smallest valid value of the length field: a frame
	// with an empty payload.
	MinLength = 1 + 8
	// DefaultMaxFrame is the length-field cap ReadFrame applies when given
	// zero or less: room for a response of thousands of ledger objects.
	DefaultMaxFrame = 4 << 20
)

// Errors from reading and decoding. Each can be matched with errors.Is; the
// returned errors wrap them with details.
var (
	// ErrOversized: a frame's length exceeds the reader's cap, or a payload
	// counts more items than the decoder's limit, or a frame to be written
	// does not fit the length field.
	ErrOversized = errors.New("wire: frame or payload too large")
	// ErrMalformed: a length below MinLength, a payload whose structure does
	// not match its type, or trailing bytes.
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrUnknownType: a frame type, or a message's Go type, this package does
	// not know.
	ErrUnknownType = errors.New("wire: unknown frame type")
)

// Frame is one decoded frame. Payload is the bytes after the header, not yet
// decoded (see DecodeMessage).
type Frame struct {
	Type    Type
	ID      uint64
	Payload []byte
}

// ReadFrame reads one frame from r. maxFrame caps the length field (zero or
// less means DefaultMaxFrame); ReadFrame allocates only the payload, and only
// once the length has passed that cap and the type is known to allow it.
//
// It returns io.EOF if r ends before the first byte of a frame, and
// io.ErrUnexpectedEOF if it ends inside one; otherwise an error wrapping
// ErrOversized (length above maxFrame), ErrMalformed (length below MinLength,
// or a Ping or Pong with a payload) or ErrUnknownType, or r's own error.
// After any error the rest of the stream is unusable: ReadFrame may have
// consumed part of a frame.
func ReadFrame(r io.Reader, maxFrame int) (Frame, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	var hdr [HeaderSize]byte
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return Frame{}, err
	}
	length := binary.BigEndian.Uint32(hdr[:4])
	if uint64(length) > uint64(maxFrame) {
		return Frame{}, fmt.Errorf("%w: length %d above cap %d", ErrOversized, length, maxFrame)
	}
	if length < MinLength {
		return Frame{}, fmt.Errorf("%w: length %d below %d", ErrMalformed, length, MinLength)
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return Frame{}, unexpected(err)
	}
	f := Frame{Type: Type(hdr[4]), ID: binary.BigEndian.Uint64(hdr[5:])}
	if !f.Type.known() {
		return Frame{}, fmt.Errorf("%w: %d", ErrUnknownType, hdr[4])
	}
	n := int(length - MinLength)
	if n > 0 && (f.Type == TypePing || f.Type == TypePong) {
		return Frame{}, fmt.Errorf("%w: %v with a %d-byte payload", ErrMalformed, f.Type, n)
	}
	if n > 0 {
		f.Payload = make([]byte, n)
		if _, err := io.ReadFull(r, f.Payload); err != nil {
			return Frame{}, unexpected(err)
		}
	}
	return f, nil
}

// unexpected turns a clean EOF in the middle of a frame into
// io.ErrUnexpectedEOF (io.ReadFull already does so for partial reads).
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// AppendFrame appends f's encoding to dst. It fails, leaving dst as it was,
// with ErrUnknownType for a type this package does not define, ErrMalformed
// for a Ping or Pong with a payload, and ErrOversized if the frame does not
// fit the length field. It does not check the receiver's cap: a sender must
// keep frames within what its peers accept (DefaultMaxFrame unless agreed
// otherwise).
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if err := checkFrame(f.Type, len(f.Payload)); err != nil {
		return dst, err
	}
	dst = appendHeader(dst, f.Type, f.ID, len(f.Payload))
	return append(dst, f.Payload...), nil
}

// WriteFrame writes f to w in one Write call. Its errors are AppendFrame's
// and w's.
func WriteFrame(w io.Writer, f Frame) error {
	buf, err := AppendFrame(make([]byte, 0, HeaderSize+len(f.Payload)), f)
	if err != nil {
		return err
	}
	_, err = w.Write(buf)
	return err
}

// checkFrame says whether a frame of type t with n payload bytes may be written.
func checkFrame(t Type, n int) error {
	if !t.known() {
		return fmt.Errorf("%w: %d", ErrUnknownType, uint8(t))
	}
	if n > 0 && (t == TypePing || t == TypePong) {
		return fmt.Errorf("%w: %v with a %d-byte payload", ErrMalformed, t, n)
	}
	if uint64(n) > math.MaxUint32-MinLength {
		return fmt.Errorf("%w: %d-byte payload", ErrOversized, n)
	}
	return nil
}

// appendHeader appends the header of a frame with an n-byte payload.
func appendHeader(dst []byte, t Type, id uint64, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(MinLength+n))
	dst = append(dst, byte(t))
	return binary.BigEndian.AppendUint64(dst, id)
}

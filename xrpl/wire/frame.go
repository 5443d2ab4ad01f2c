// Package wire is the TCP encoding of the fetch protocol: rippled's peer
// protocol framing, and the protobuf messages TMGetObjectByHash and TMPing,
// carrying the values of package ledger.
//
// A frame is rippled's uncompressed message: a 6-byte header, then the
// payload, a serialized protobuf message:
//
//	bits 0-5 of byte 0: zero (the first is rippled's compression flag, the
//	                    next five its algorithm and reserved bits)
//	the next 26 bits:   payload size in bytes, big-endian (at most 64 MiB)
//	bytes 4-5:          message type, big-endian (3 TMPing, 42 TMGetObjectByHash)
//
// A peer receives frames of many other types, unprompted: rippled sends every
// peer status changes, manifests, endpoints, validations, proposals and
// transactions. ReadFrame skips a frame of a type this package does not
// decode, whole, without allocating its payload, and says so with
// ErrUnknownType, after which the stream is still good: a receiver counts it
// and reads on, as rippled does. AppendChatter writes the ones a test peer
// sends to show that.
//
// The request ID travels inside the message, in TMGetObjectByHash.seq or
// TMPing.seq, a uint32: the scheduler must issue IDs that fit (see
// scheduler.Config.RequestIDs). A connection owner reads frames with
// ReadFrame, which refuses an oversized payload before allocating anything
// for it, and decodes them with DecodeMessage, which counts a message's
// objects before it allocates them; any error from either means the stream
// can no longer be trusted and the connection should be closed. Compressed
// frames are refused as malformed: compression is negotiated in rippled's
// handshake, which this transport does not have.
//
// The package imports ledger for its message types so that one set of Go
// values, not two kept in step by hand, travels through simulated and real
// networks alike, and a TCP host passes decoded messages straight to the
// scheduler without converting them. The protobuf code is generated from
// our own minimal ripple.proto (internal/protocol) with the real field
// numbers, and encoded with google.golang.org/protobuf.
//
// Everything here keeps no state and is safe for concurrent use; ReadFrame
// and WriteFrame use only the reader or writer they are given.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/peersched/peersched/xrpl/wire/internal/protocol"
)

// Type is a frame's message type: rippled's MessageType.
type Type uint16

// The frame types this package decodes: 3 and 42.
const (
	// TypePing (mtPING) carries a TMPing: a Ping or a Pong.
	TypePing = Type(protocol.MessageType_mtPING)
	// TypeGetObjects (mtGET_OBJECTS) carries a TMGetObjectByHash: a
	// ledger.GetObjects (a query) or a ledger.Objects (a reply).
	TypeGetObjects = Type(protocol.MessageType_mtGET_OBJECTS)
)

// Frame types rippled sends every peer unprompted, which this package frames
// (AppendChatter) but does not decode: a receiver skips them.
const (
	TypeManifests    Type = 2  // mtMANIFESTS: validators' manifests
	TypeEndpoints    Type = 15 // mtENDPOINTS: addresses of other peers
	TypeStatusChange Type = 34 // mtSTATUS_CHANGE: the sender's state and ledger
)

func (t Type) String() string {
	switch t {
	case TypePing:
		return "Ping"
	case TypeGetObjects:
		return "GetObjectByHash"
	case TypeManifests:
		return "Manifests"
	case TypeEndpoints:
		return "Endpoints"
	case TypeStatusChange:
		return "StatusChange"
	}
	return fmt.Sprintf("Type(%d)", uint16(t))
}

// decoded reports whether DecodeMessage decodes frames of type t.
func (t Type) decoded() bool { return t == TypePing || t == TypeGetObjects }

// defined reports whether AppendFrame writes frames of type t.
func (t Type) defined() bool {
	return t.decoded() || t == TypeManifests || t == TypeEndpoints || t == TypeStatusChange
}

// Sizes and limits.
const (
	// HeaderSize is the bytes before a frame's payload.
	HeaderSize = 6
	// MaxPayload is the largest payload the header's 26-bit size field can
	// state: rippled's 64 MiB message limit.
	MaxPayload = 1<<26 - 1
	// DefaultMaxFrame is the payload cap ReadFrame applies when given zero
	// or less: room for a reply of thousands of ledger objects.
	DefaultMaxFrame = 4 << 20
)

// Header bits of byte 0 above the size: rippled's compression flag (the
// top bit) and its algorithm and reserved bits. An uncompressed frame has
// them all zero.
const flagBits = 0xfc

// Errors from reading and decoding. Each can be matched with errors.Is; the
// returned errors wrap them with details.
var (
	// ErrOversized: a frame's payload exceeds the reader's cap, or a
	// message holds more objects than the decoder's limit, or a message to
	// be written does not fit the size field.
	ErrOversized = errors.New("wire: frame or message too large")
	// ErrMalformed: a header with the compression or reserved bits set, a
	// payload that is not the protobuf message of its type, or a message
	// whose fields make no sense for the fetch (a hash that is not 32
	// bytes, an object type other than state nodes).
	ErrMalformed = errors.New("wire: malformed frame")
	// ErrUnknownType: a frame type, or a message's Go type, this package
	// does not know. From ReadFrame it means the frame was skipped whole
	// and the stream is still good.
	ErrUnknownType = errors.New("wire: unknown frame type")
	// ErrIDRange: a request ID above 32 bits, which the messages' seq
	// fields cannot carry.
	ErrIDRange = errors.New("wire: request ID does not fit 32 bits")
)

// Frame is one frame read. Payload is the message, not yet decoded (see
// DecodeMessage).
type Frame struct {
	Type    Type
	Payload []byte
}

// ReadFrame reads one frame from r. maxFrame caps the payload (zero or less
// means DefaultMaxFrame); ReadFrame allocates only the payload, and only once
// its size has passed that cap and its type is one DecodeMessage decodes.
//
// A frame of any other type within the cap is read past, its payload
// discarded through a small buffer, and ReadFrame returns a Frame holding
// only its Type, with an error wrapping ErrUnknownType: the stream is still
// good, and the caller may count the frame and read on.
//
// It returns io.EOF if r ends before the first byte of a frame, and
// io.ErrUnexpectedEOF if it ends inside one; otherwise an error wrapping
// ErrOversized (payload above maxFrame) or ErrMalformed (compression or
// reserved bits set), or r's own error. After any of these errors the rest
// of the stream is unusable: ReadFrame may have consumed part of a frame.
func ReadFrame(r io.Reader, maxFrame int) (Frame, error) {
	if maxFrame <= 0 {
		maxFrame = DefaultMaxFrame
	}
	var hdr [HeaderSize]byte
	// The size word first: a frame refused for its flags or size is
	// refused before anything more is read.
	if _, err := io.ReadFull(r, hdr[:4]); err != nil {
		return Frame{}, err
	}
	if hdr[0]&flagBits != 0 {
		if hdr[0]&0x80 != 0 {
			return Frame{}, fmt.Errorf("%w: compressed (header byte %#02x): not negotiated", ErrMalformed, hdr[0])
		}
		return Frame{}, fmt.Errorf("%w: reserved header bits set (%#02x)", ErrMalformed, hdr[0])
	}
	size := binary.BigEndian.Uint32(hdr[:4])
	if uint64(size) > uint64(maxFrame) {
		return Frame{}, fmt.Errorf("%w: payload of %d bytes above cap %d", ErrOversized, size, maxFrame)
	}
	if _, err := io.ReadFull(r, hdr[4:]); err != nil {
		return Frame{}, unexpected(err)
	}
	f := Frame{Type: Type(binary.BigEndian.Uint16(hdr[4:]))}
	if !f.Type.decoded() {
		if _, err := io.CopyN(io.Discard, r, int64(size)); err != nil {
			return Frame{}, unexpected(err)
		}
		return f, fmt.Errorf("%w: %d, %d bytes skipped", ErrUnknownType, uint16(f.Type), size)
	}
	if size > 0 {
		f.Payload = make([]byte, size)
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
// with ErrUnknownType for a type this package does not define (3 and 42,
// and the unprompted types 2, 15 and 34) and
// ErrOversized if the payload does not fit the size field. It does not check
// the receiver's cap: a sender must keep frames within what its peers accept
// (DefaultMaxFrame unless agreed otherwise).
func AppendFrame(dst []byte, f Frame) ([]byte, error) {
	if err := checkFrame(f.Type, len(f.Payload)); err != nil {
		return dst, err
	}
	dst = appendHeader(dst, f.Type, len(f.Payload))
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

// checkFrame says whether a frame of type t with n payload bytes may be
// written.
func checkFrame(t Type, n int) error {
	if !t.defined() {
		return fmt.Errorf("%w: %d", ErrUnknownType, uint16(t))
	}
	if n > MaxPayload {
		return fmt.Errorf("%w: %d-byte payload above %d", ErrOversized, n, MaxPayload)
	}
	return nil
}

// appendHeader appends the header of an uncompressed frame with an n-byte
// payload (n at most MaxPayload, so the flag bits stay zero).
func appendHeader(dst []byte, t Type, n int) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(n))
	return binary.BigEndian.AppendUint16(dst, uint16(t))
}

package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/peersched/peersched/xrpl/ledger"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func h(b byte) ledger.Hash {
	var x ledger.Hash
	for i := range x {
		x[i] = b + byte(i)
	}
	return x
}

func sampleObjects() ledger.Objects {
	return ledger.Objects{Items: []ledger.Object{
		{Hash: h(1), Data: []byte("first object")},
		{Hash: h(3), Data: []byte{}},
		{Hash: h(4), Data: bytes.Repeat([]byte{0xab}, 300)},
	}}
}

// header builds a raw frame header with any size word and type, valid or
// not.
func header(sizeWord uint32, t uint16) []byte {
	b := binary.BigEndian.AppendUint32(nil, sizeWord)
	return binary.BigEndian.AppendUint16(b, t)
}

func TestFrameRoundTrip(t *testing.T) {
	get, err := AppendMessage(nil, 1, ledger.GetObjects{Hashes: []ledger.Hash{h(9)}})
	require.NoError(t, err)
	frames := []Frame{
		{Type: TypeGetObjects, Payload: get[HeaderSize:]},
		{Type: TypePing, Payload: []byte{8, 0}},
		{Type: TypeGetObjects, Payload: bytes.Repeat([]byte{1}, 70_000)},
		{Type: TypePing},
	}
	var stream bytes.Buffer
	for _, f := range frames {
		require.NoError(t, WriteFrame(&stream, f))
	}
	// One byte at a time, so every read of the header and payload is split.
	r := iotest.OneByteReader(&stream)
	for _, want := range frames {
		got, err := ReadFrame(r, 0)
		require.NoError(t, err)
		require.Equal(t, want.Type, got.Type)
		require.Equal(t, len(want.Payload), len(got.Payload))
		if len(want.Payload) > 0 {
			require.Equal(t, want.Payload, got.Payload)
		}
	}
	_, err = ReadFrame(r, 0)
	require.Equal(t, io.EOF, err, "a clean end between frames is io.EOF")
}

// TestFrameLayout: rippled's uncompressed header, six bytes: the payload
// size in the low 26 bits of a big-endian word whose top six bits are zero,
// then the message type, big-endian.
func TestFrameLayout(t *testing.T) {
	b, err := AppendFrame([]byte("x"), Frame{Type: TypeGetObjects, Payload: []byte{0xaa, 0xbb}})
	require.NoError(t, err)
	require.Equal(t, []byte{'x', 0, 0, 0, 2, 0, 42, 0xaa, 0xbb}, b)

	b, err = AppendFrame(nil, Frame{Type: TypePing, Payload: make([]byte, 0x012345)})
	require.NoError(t, err)
	require.Equal(t, []byte{0, 0x01, 0x23, 0x45, 0, 3}, b[:HeaderSize])

	// The largest size the field can state is exactly the 64 MiB limit.
	require.Equal(t, []byte{0x03, 0xff, 0xff, 0xff, 0, 42}, appendHeader(nil, TypeGetObjects, MaxPayload))
}

func TestReadFrameErrors(t *testing.T) {
	cases := []struct {
		name  string
		input []byte
		max   int
		want  error
	}{
		{"oversized", append(header(1001, 42), make([]byte, 1001)...), 1000, ErrOversized},
		{"oversized by default", header(DefaultMaxFrame+1, 42), 0, ErrOversized},
		{"largest size field", header(MaxPayload, 42), 0, ErrOversized},
		{"compressed (LZ4)", header(0x90000010, 42), 0, ErrMalformed},
		{"compressed flag alone", header(0x80000010, 42), 0, ErrMalformed},
		{"reserved bits", header(0x04000000, 42), 0, ErrMalformed},
		{"unknown type cut in its payload", header(2, 31), 0, io.ErrUnexpectedEOF},
		{"unknown type oversized", header(1001, 31), 1000, ErrOversized},
		{"truncated size", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
		{"truncated header", header(2, 42)[:5], 0, io.ErrUnexpectedEOF},
		{"size only", header(2, 42)[:4], 0, io.ErrUnexpectedEOF},
		{"truncated payload", append(header(10, 42), 1, 2, 3), 0, io.ErrUnexpectedEOF},
		{"empty", nil, 0, io.EOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := ReadFrame(bytes.NewReader(c.input), c.max)
			require.ErrorIs(t, err, c.want)
			require.Equal(t, Frame{}, f)
			for _, other := range []error{ErrOversized, ErrMalformed, ErrUnknownType} {
				if other != c.want {
					require.False(t, errors.Is(err, other), "%v also matches %v", err, other)
				}
			}
		})
	}
}

// countingReader records how many bytes were asked of it, to show ReadFrame
// stops at the size word of an oversized or compressed frame instead of
// reading (or allocating) what it claims.
type countingReader struct {
	r    io.Reader
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func TestOversizedNotAllocated(t *testing.T) {
	for _, word := range []uint32{MaxPayload, 0x93ffffff} {
		input := append(header(word, 42), make([]byte, 64)...)
		cr := &countingReader{r: bytes.NewReader(input)}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ReadFrame(cr, 1<<20)
		runtime.ReadMemStats(&after)
		require.Error(t, err)
		require.Equal(t, 4, cr.read, "only the size word is read")
		// The wrapped error costs a few small allocations; a buffer for the
		// claimed size would cost 64 MiB (or the 1 MiB cap, had it been used).
		require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
	}
}

func TestReadFrameReaderError(t *testing.T) {
	boom := errors.New("boom")
	_, err := ReadFrame(iotest.ErrReader(boom), 0)
	require.ErrorIs(t, err, boom)
}

func TestAppendFrameErrors(t *testing.T) {
	dst := []byte("keep")
	for _, c := range []struct {
		f    Frame
		want error
	}{
		{Frame{Type: 0}, ErrUnknownType},
		{Frame{Type: 99}, ErrUnknownType},
		{Frame{Type: 31}, ErrUnknownType},
	} {
		got, err := AppendFrame(dst, c.f)
		require.ErrorIs(t, err, c.want)
		require.Equal(t, []byte("keep"), got)
		require.ErrorIs(t, WriteFrame(io.Discard, c.f), c.want)
	}
	require.ErrorIs(t, checkFrame(TypeGetObjects, MaxPayload+1), ErrOversized)
	require.NoError(t, checkFrame(TypeGetObjects, MaxPayload))
	require.Equal(t, math.MaxUint32, MaxID)
}

func TestTypeString(t *testing.T) {
	require.Equal(t, "GetObjectByHash", TypeGetObjects.String())
	require.Equal(t, "Ping", TypePing.String())
	require.Equal(t, "Type(9)", Type(9).String())
	require.Equal(t, Type(42), TypeGetObjects)
	require.Equal(t, Type(3), TypePing)
}

// FuzzReadFrame reads frames until the first error: nothing may panic, every
// frame read must re-encode to exactly the bytes it was read from, and its
// payload either decodes or fails with one of the package's errors.
func FuzzReadFrame(f *testing.F) {
	ok, _ := AppendMessage(nil, 5, sampleObjects())
	ping, _ := AppendMessage(nil, 1, Ping{})
	f.Add(ok)
	f.Add(append(ping, ok...))
	f.Add(header(MaxPayload, 42))
	f.Add(header(0x90000003, 42))
	f.Add(header(3, 77))
	f.Add(ok[:len(ok)-1])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			start := len(data) - r.Len()
			fr, err := ReadFrame(r, 4096)
			if errors.Is(err, ErrUnknownType) {
				// Skipped whole: only its type, and the stream goes on.
				if fr.Type.decoded() || fr.Payload != nil {
					t.Fatalf("skipped %+v", fr)
				}
				continue
			}
			if err != nil {
				if fr.Type != 0 || fr.Payload != nil {
					t.Fatalf("error %v with a frame %+v", err, fr)
				}
				return
			}
			again, err := AppendFrame(nil, fr)
			if err != nil {
				t.Fatalf("frame read but not writable: %v", err)
			}
			if !bytes.Equal(again, data[start:len(data)-r.Len()]) {
				t.Fatalf("re-encoded %x", again)
			}
			if _, _, err := DecodeMessage(fr, 64); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOversized) {
				t.Fatalf("payload error outside the classes: %v", err)
			}
		}
	})
}

// TestReadFrameSkipsUnknownTypes: a frame of a type this package does not
// decode is read past whole, without its payload, and the frame after it
// reads as if it had not been there, as a rippled peer skips what it does
// not know.
func TestReadFrameSkipsUnknownTypes(t *testing.T) {
	var stream []byte
	stream = append(stream, header(0, 0)...)
	stream = append(stream, header(3, 31)...)
	stream = append(stream, 1, 2, 3)
	stream = append(stream, header(100_000, 0xffff)...)
	stream = append(stream, make([]byte, 100_000)...)
	ok, err := AppendMessage(nil, 5, sampleObjects())
	require.NoError(t, err)
	stream = append(stream, ok...)

	r := bytes.NewReader(stream)
	for _, want := range []Type{0, 31, 0xffff} {
		f, err := ReadFrame(r, 200_000)
		require.ErrorIs(t, err, ErrUnknownType)
		require.Equal(t, Frame{Type: want}, f)
	}
	f, err := ReadFrame(r, 200_000)
	require.NoError(t, err)
	id, msg, err := DecodeMessage(f, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(5), id)
	require.Equal(t, sampleObjects(), msg)
	_, err = ReadFrame(r, 0)
	require.ErrorIs(t, err, io.EOF)
}

// TestReadFrameSkipsWithoutAllocating: skipping a large unknown frame
// allocates nothing like its size.
func TestReadFrameSkipsWithoutAllocating(t *testing.T) {
	const size = 4 << 20
	in := append(header(size, 31), make([]byte, size)...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(bytes.NewReader(in), size)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrUnknownType)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
}

// TestChatter: each unprompted frame is well-formed, skipped by ReadFrame
// (but the Ping, which decodes), and anything else is refused.
func TestChatter(t *testing.T) {
	for _, typ := range []Type{TypeStatusChange, TypeManifests, TypeEndpoints} {
		b, err := AppendChatter(nil, typ, 77)
		require.NoError(t, err)
		f, err := ReadFrame(bytes.NewReader(b), 0)
		require.ErrorIs(t, err, ErrUnknownType, "%v", typ)
		require.Equal(t, typ, f.Type)
	}
	b, err := AppendChatter(nil, TypePing, 77)
	require.NoError(t, err)
	f, err := ReadFrame(bytes.NewReader(b), 0)
	require.NoError(t, err)
	id, msg, err := DecodeMessage(f, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(77), id)
	require.Equal(t, Ping{}, msg)

	keep := []byte("keep")
	got, err := AppendChatter(keep, TypeGetObjects, 1)
	require.ErrorIs(t, err, ErrUnknownType)
	require.Equal(t, keep, got)
}

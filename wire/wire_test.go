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

	"github.com/peersched/peersched/ledger"
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
		{Hash: h(2), Missing: true},
		{Hash: h(3), Data: []byte{}},
		{Hash: h(4), Data: bytes.Repeat([]byte{0xab}, 300)},
	}}
}

// header builds a raw frame header with any length and type, valid or not.
func header(length uint32, t byte, id uint64) []byte {
	b := binary.BigEndian.AppendUint32(nil, length)
	b = append(b, t)
	return binary.BigEndian.AppendUint64(b, id)
}

func TestFrameRoundTrip(t *testing.T) {
	frames := []Frame{
		{Type: TypeGetObjects, ID: 1, Payload: AppendGetObjects(nil, ledger.GetObjects{Hashes: []ledger.Hash{h(9)}})},
		{Type: TypeObjects, ID: math.MaxUint64, Payload: AppendObjects(nil, sampleObjects())},
		{Type: TypePing, ID: 7},
		{Type: TypePong, ID: 7},
		{Type: TypeObjects, ID: 0, Payload: AppendObjects(nil, ledger.Objects{})},
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
		require.Equal(t, want.ID, got.ID)
		require.Equal(t, len(want.Payload), len(got.Payload))
		if len(want.Payload) > 0 {
			require.Equal(t, want.Payload, got.Payload)
		}
	}
	_, err := ReadFrame(r, 0)
	require.Equal(t, io.EOF, err, "a clean end between frames is io.EOF")
}

func TestFrameLayout(t *testing.T) {
	b, err := AppendFrame([]byte("x"), Frame{Type: TypeObjects, ID: 0x0102030405060708, Payload: []byte{0xaa, 0xbb}})
	require.NoError(t, err)
	require.Equal(t, []byte{'x', 0, 0, 0, 11, 2, 1, 2, 3, 4, 5, 6, 7, 8, 0xaa, 0xbb}, b)
}

func TestReadFrameErrors(t *testing.T) {
	cases := []struct {
		name  string
		input []byte
		max   int
		want  error
	}{
		{"oversized", header(1001, byte(TypeObjects), 1), 1000, ErrOversized},
		{"oversized by default", header(DefaultMaxFrame+1, byte(TypeObjects), 1), 0, ErrOversized},
		{"max length field", header(math.MaxUint32, byte(TypeObjects), 1), 0, ErrOversized},
		{"length zero", header(0, byte(TypePing), 1), 0, ErrMalformed},
		{"length below header", header(MinLength-1, byte(TypePing), 1), 0, ErrMalformed},
		{"unknown type zero", header(MinLength, 0, 1), 0, ErrUnknownType},
		{"unknown type high", header(MinLength, 200, 1), 0, ErrUnknownType},
		{"ping with payload", append(header(MinLength+1, byte(TypePing), 1), 0), 0, ErrMalformed},
		{"pong with payload", append(header(MinLength+1, byte(TypePong), 1), 0), 0, ErrMalformed},
		{"truncated length", []byte{0, 0}, 0, io.ErrUnexpectedEOF},
		{"truncated header", header(MinLength, byte(TypePing), 1)[:8], 0, io.ErrUnexpectedEOF},
		{"length only", header(MinLength, byte(TypePing), 1)[:4], 0, io.ErrUnexpectedEOF},
		{"truncated payload", append(header(MinLength+10, byte(TypeObjects), 1), 1, 2, 3), 0, io.ErrUnexpectedEOF},
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
// stops at the header of an oversized frame instead of reading (or
// allocating) what it claims.
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
	input := append(header(math.MaxUint32, byte(TypeObjects), 1), make([]byte, 64)...)
	cr := &countingReader{r: bytes.NewReader(input)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadFrame(cr, 1<<20)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrOversized)
	require.Equal(t, 4, cr.read, "only the length field is read")
	// The wrapped error costs a few small allocations; a buffer for the
	// claimed length would cost 4 GiB (or the 1 MiB cap, had it been used).
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(64<<10))
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
		{Frame{Type: TypePing, Payload: []byte{1}}, ErrMalformed},
		{Frame{Type: TypePong, Payload: []byte{1}}, ErrMalformed},
	} {
		got, err := AppendFrame(dst, c.f)
		require.ErrorIs(t, err, c.want)
		require.Equal(t, []byte("keep"), got)
		require.ErrorIs(t, WriteFrame(io.Discard, c.f), c.want)
	}
	require.ErrorIs(t, checkFrame(TypeObjects, math.MaxUint32), ErrOversized)
	require.NoError(t, checkFrame(TypeObjects, math.MaxUint32-MinLength))
}

func TestTypeString(t *testing.T) {
	require.Equal(t, "GetObjects", TypeGetObjects.String())
	require.Equal(t, "Objects", TypeObjects.String())
	require.Equal(t, "Ping", TypePing.String())
	require.Equal(t, "Pong", TypePong.String())
	require.Equal(t, "Type(9)", Type(9).String())
}

// FuzzReadFrame reads frames until the first error: nothing may panic, and
// every frame read must re-encode to exactly the bytes it was read from.
func FuzzReadFrame(f *testing.F) {
	ok, _ := AppendFrame(nil, Frame{Type: TypeObjects, ID: 5, Payload: AppendObjects(nil, sampleObjects())})
	ping, _ := AppendFrame(nil, Frame{Type: TypePing, ID: 1})
	f.Add(ok)
	f.Add(append(ping, ok...))
	f.Add(header(math.MaxUint32, byte(TypeObjects), 1))
	f.Add(header(MinLength+3, 77, 1))
	f.Add(ok[:len(ok)-1])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			start := len(data) - r.Len()
			fr, err := ReadFrame(r, 4096)
			if err != nil {
				if fr.Type != 0 || fr.ID != 0 || fr.Payload != nil {
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
			if _, err := DecodeMessage(fr, 64); err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrOversized) {
				t.Fatalf("payload error outside the classes: %v", err)
			}
		}
	})
}

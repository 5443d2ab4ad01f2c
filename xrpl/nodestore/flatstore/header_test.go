package flatstore

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/ledger"
)

// TestHeaderRoundTrip: what encodeHeader lays out, decodeHeader reads back.
func TestHeaderRoundTrip(t *testing.T) {
	want := Header{Tag: ledger.HashOf([]byte("root")), Count: 26_053_013, DataBytes: 8_528_705_495, Bits: 22}
	b := encodeHeader(want, 0xdeadbeef)
	got, crc, err := decodeHeader(b[:])
	if err != nil || got != want || crc != 0xdeadbeef {
		t.Fatalf("decodeHeader = %+v, %08x, %v; want %+v, deadbeef", got, crc, err, want)
	}
	if n := want.fileBytes(); n != headerSize+8_528_705_495+tableBytes(22) {
		t.Fatalf("fileBytes = %d", n)
	}
}

// TestHeaderRejects: every header that is not one encodeHeader wrote, or
// that describes no file Build would write, is an error wrapping ErrFormat
// that says what is wrong.
func TestHeaderRejects(t *testing.T) {
	good := encodeHeader(Header{Count: 10, DataBytes: 1000, Bits: 1}, 1)
	// resealed recomputes the header's checksum after a change, so that
	// the check of the field itself is what fails.
	resealed := func(change func(b []byte)) []byte {
		b := good
		change(b[:])
		binary.LittleEndian.PutUint32(b[offHeaderCRC:], crc32.Checksum(b[:offHeaderCRC], castagnoli))
		return b[:]
	}
	for _, c := range []struct {
		name string
		b    []byte
		says string
	}{
		{"empty", nil, "shorter than a header"},
		{"short", good[:headerSize-1], "shorter than a header"},
		{"another file", append([]byte("PK\x03\x04"), good[4:]...), `does not begin with "XRPLFLAT"`},
		{"another version", resealed(func(b []byte) { b[offVersion] = 2 }), "version 2, this build reads version 1"},
		{"a bit flipped", func() []byte { b := good; b[offCount] ^= 1; return b[:] }(), "the header's checksum"},
		{"checksum flipped", func() []byte { b := good; b[offHeaderCRC] ^= 1; return b[:] }(), "the header's checksum"},
		{"too many buckets", resealed(func(b []byte) { b[offBits] = maxBucketBits + 1 }), "25 bucket bits, at most 24"},
		{"more nodes than bytes hold", resealed(func(b []byte) { b[offCount] = 28 }), "28 nodes in 1000 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := decodeHeader(c.b)
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("decodeHeader: %v; want ErrFormat saying %q", err, c.says)
			}
		})
	}
}

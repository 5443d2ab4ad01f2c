package flatstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/peersched/peersched/xrpl/ledger"
)

// magic opens every file, and version is the layout this package writes
// and reads (see the package's doc).
const (
	magic   = "XRPLFLAT"
	version = 1
)

// The header's fields, at these offsets.
const (
	offMagic     = 0
	offVersion   = 8
	offBits      = 12
	offCount     = 16
	offDataBytes = 24
	offTag       = 32
	offTableCRC  = 64
	offHeaderCRC = 68
	headerSize   = 72
)

// entryHead is the size of an entry before its node: its hash and length.
const entryHead = ledger.HashSize + 4

// ErrFormat is wrapped by every error that says a file is not one this
// package wrote whole: another kind of file, another version, a header or
// table that does not check, a file shorter or longer than its header
// says, or a bucket whose entries no longer fit it.
var ErrFormat = errors.New("not a whole flat store file")

// castagnoli is CRC-32C, which the header and the table are checked with.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is what a file records about itself.
type Header struct {
	// Tag is the caller's, given to Build: what the nodes are the nodes
	// of (ledgerpeer: the ledger's root).
	Tag ledger.Hash
	// Count is how many nodes the file holds.
	Count uint64
	// DataBytes is the size of the entries: the nodes and, for each, its
	// hash and length.
	DataBytes uint64
	// Bits is the number of the hash's top bits that pick its bucket.
	Bits uint
}

// fileBytes is the size of the whole file h describes.
func (h Header) fileBytes() int64 {
	return headerSize + int64(h.DataBytes) + tableBytes(h.Bits)
}

// encodeHeader lays h out, with the CRC of the table it describes.
func encodeHeader(h Header, tableCRC uint32) [headerSize]byte {
	var b [headerSize]byte
	copy(b[offMagic:], magic)
	binary.LittleEndian.PutUint32(b[offVersion:], version)
	binary.LittleEndian.PutUint32(b[offBits:], uint32(h.Bits))
	binary.LittleEndian.PutUint64(b[offCount:], h.Count)
	binary.LittleEndian.PutUint64(b[offDataBytes:], h.DataBytes)
	copy(b[offTag:], h.Tag[:])
	binary.LittleEndian.PutUint32(b[offTableCRC:], tableCRC)
	binary.LittleEndian.PutUint32(b[offHeaderCRC:], crc32.Checksum(b[:offHeaderCRC], castagnoli))
	return b
}

// decodeHeader reads a header and the CRC of its table, and checks
// everything it can without the rest of the file.
func decodeHeader(b []byte) (Header, uint32, error) {
	if len(b) < headerSize {
		return Header{}, 0, fmt.Errorf("%w: %d bytes, shorter than a header (%d)", ErrFormat, len(b), headerSize)
	}
	if string(b[offMagic:offMagic+len(magic)]) != magic {
		return Header{}, 0, fmt.Errorf("%w: it does not begin with %q", ErrFormat, magic)
	}
	if v := binary.LittleEndian.Uint32(b[offVersion:]); v != version {
		return Header{}, 0, fmt.Errorf("%w: version %d, this build reads version %d", ErrFormat, v, version)
	}
	if got, want := binary.LittleEndian.Uint32(b[offHeaderCRC:]), crc32.Checksum(b[:offHeaderCRC], castagnoli); got != want {
		return Header{}, 0, fmt.Errorf("%w: the header's checksum is %08x, its bytes give %08x", ErrFormat, got, want)
	}
	h := Header{
		Count:     binary.LittleEndian.Uint64(b[offCount:]),
		DataBytes: binary.LittleEndian.Uint64(b[offDataBytes:]),
		Bits:      uint(binary.LittleEndian.Uint32(b[offBits:])),
	}
	copy(h.Tag[:], b[offTag:])
	switch {
	case h.Bits > maxBucketBits:
		return Header{}, 0, fmt.Errorf("%w: %d bucket bits, at most %d", ErrFormat, h.Bits, maxBucketBits)
	case h.DataBytes > 1<<56 || h.Count > h.DataBytes/entryHead:
		return Header{}, 0, fmt.Errorf("%w: %d nodes in %d bytes", ErrFormat, h.Count, h.DataBytes)
	}
	return h, binary.LittleEndian.Uint32(b[offTableCRC:]), nil
}

// TableBytes is the size of the file's table, which an open Store holds in
// memory.
func (h Header) TableBytes() int64 { return tableBytes(h.Bits) }

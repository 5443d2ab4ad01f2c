package flatstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"

	"github.com/peersched/peersched/xrpl/ledger"
)

// ErrNotFound is Lookup's error for a hash the file does not hold.
var ErrNotFound = errors.New("flatstore: not found")

// tableChunkBytes is how much of the table Open reads at a time, and
// minBufferBytes the least a lookup's buffer holds: enough for nearly
// every bucket, so that buffers from the pool seldom need replacing.
const (
	tableChunkBytes = 1 << 20
	minBufferBytes  = 16 << 10
)

// Store is a file that Build wrote, open for lookups. It is safe for
// concurrent use. Its memory is its table (8 bytes a bucket) and a buffer
// for each lookup in progress, taken from a pool: at least 16 KiB, more
// for a larger bucket. The nodes stay in the file (and the operating
// system's page cache).
type Store struct {
	f     *os.File
	h     Header
	table []uint64
	bufs  sync.Pool // *[]byte, a bucket's bytes
}

// Open opens the file at path and reads its table. An error that wraps
// ErrFormat says the file is not one Build wrote whole, and why.
func Open(path string) (*Store, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("flatstore: %w", err)
	}
	s, err := open(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("flatstore: %s: %w", path, err)
	}
	return s, nil
}

// open reads and checks f's header and table.
func open(f *os.File) (*Store, error) {
	var head [headerSize]byte
	n, err := io.ReadFull(f, head[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	h, crc, err := decodeHeader(head[:n])
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() != h.fileBytes() {
		return nil, fmt.Errorf("%w: %d bytes, its header describes %d (%d nodes in %d bytes, 2^%d buckets)", ErrFormat, st.Size(), h.fileBytes(), h.Count, h.DataBytes, h.Bits)
	}
	table, err := readTable(f, h, crc)
	if err != nil {
		return nil, err
	}
	return &Store{f: f, h: h, table: table}, nil
}

// readTable reads the table of the file h describes, in chunks, and
// checks it against its CRC and the header.
func readTable(f *os.File, h Header, crc uint32) ([]uint64, error) {
	table := make([]uint64, 1<<h.Bits+1)
	chunk := make([]byte, min(tableChunkBytes, tableBytes(h.Bits)))
	at := int64(headerSize) + int64(h.DataBytes)
	got := uint32(0)
	for i := 0; i < len(table); {
		b := chunk[:min(len(chunk), (len(table)-i)*8)]
		if _, err := f.ReadAt(b, at); err != nil {
			return nil, err
		}
		at += int64(len(b))
		got = crc32.Update(got, castagnoli, b)
		for ; len(b) > 0; b = b[8:] {
			table[i] = binary.LittleEndian.Uint64(b)
			i++
		}
	}
	if got != crc {
		return nil, fmt.Errorf("%w: the table's checksum is %08x, its bytes give %08x", ErrFormat, crc, got)
	}
	if table[0] != 0 || table[len(table)-1] != h.DataBytes {
		return nil, fmt.Errorf("%w: the table spans %d to %d, the data %d bytes", ErrFormat, table[0], table[len(table)-1], h.DataBytes)
	}
	for b := 1; b < len(table); b++ {
		if table[b] < table[b-1] {
			return nil, fmt.Errorf("%w: bucket %d starts at %d, before bucket %d (%d)", ErrFormat, b, table[b], b-1, table[b-1])
		}
	}
	return table, nil
}

// Header returns what the file records about itself.
func (s *Store) Header() Header { return s.h }

// Lookup returns a copy of the node named h. It reads h's bucket from the
// file, one read, and scans it. Its error is ErrNotFound if the file does
// not hold h, one that wraps ErrFormat if the bucket's entries no longer
// fit it (see the package doc for damage it does not catch), or the
// read's.
func (s *Store) Lookup(h ledger.Hash) ([]byte, error) {
	bucket := bucketOf(h, s.h.Bits)
	start, end := s.table[bucket], s.table[bucket+1]
	if start == end {
		return nil, ErrNotFound
	}
	bp := s.buffer(end - start)
	defer s.bufs.Put(bp)
	buf := *bp
	if _, err := s.f.ReadAt(buf, headerSize+int64(start)); err != nil {
		return nil, fmt.Errorf("flatstore: reading bucket %d: %w", bucket, err)
	}
	node, err := scan(buf, h)
	if err != nil {
		if errors.Is(err, ErrFormat) {
			err = fmt.Errorf("flatstore: bucket %d (%d bytes at %d): %w", bucket, end-start, start, err)
		}
		return nil, err
	}
	return bytes.Clone(node), nil
}

// Get returns a copy of the node named h, and whether the file holds it
// and could read it: a tcpnet.Nodes. See Lookup for why it may not.
func (s *Store) Get(h ledger.Hash) ([]byte, bool) {
	node, err := s.Lookup(h)
	return node, err == nil
}

// buffer returns a buffer of n bytes from the pool, for a bucket.
func (s *Store) buffer(n uint64) *[]byte {
	bp, _ := s.bufs.Get().(*[]byte)
	if bp == nil || uint64(cap(*bp)) < n {
		b := make([]byte, n, max(n, minBufferBytes))
		return &b
	}
	*bp = (*bp)[:n]
	return bp
}

// scan finds the node named h in a bucket's entries, which are in
// ascending order of hash.
func scan(bucket []byte, h ledger.Hash) ([]byte, error) {
	for at := 0; at < len(bucket); {
		if len(bucket)-at < entryHead {
			return nil, fmt.Errorf("%w: %d bytes left at %d, less than an entry's head", ErrFormat, len(bucket)-at, at)
		}
		n := uint64(binary.LittleEndian.Uint32(bucket[at+ledger.HashSize:]))
		if uint64(len(bucket)-at-entryHead) < n {
			return nil, fmt.Errorf("%w: an entry of %d bytes at %d, past the bucket's end", ErrFormat, n, at)
		}
		switch bytes.Compare(bucket[at:at+ledger.HashSize], h[:]) {
		case 0:
			return bucket[at+entryHead : at+entryHead+int(n)], nil
		case 1:
			return nil, ErrNotFound // the rest come after h too
		}
		at += entryHead + int(n)
	}
	return nil, ErrNotFound
}

// Close closes the file. The Store cannot be used afterwards.
func (s *Store) Close() error {
	if err := s.f.Close(); err != nil {
		return fmt.Errorf("flatstore: %w", err)
	}
	return nil
}

package flatstore

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"

	"github.com/peersched/peersched/xrpl/ledger"
)

// writeBufferBytes is the buffer between a build and its file: the entries
// go out in large sequential writes.
const writeBufferBytes = 1 << 20

// Build writes the nodes that each gives to path, replacing any file
// there, and returns the new file's header. each calls add with every node
// in strictly ascending order of hash (a Pebble store iterated in key order
// gives them so). add returns an error for a node out of order, one added
// twice, or a failed write, and every add after it returns the same error;
// the build then fails with it even if each went on and returned nil.
// Otherwise each's own error ends the build with that error. expect is
// about how many nodes there will be: it picks
// the number of buckets (a file of many more nodes than expected has
// larger buckets, and lookups read more). tag is recorded in the header
// (Header.Tag).
//
// The file is written under a temporary name beside path (path + ".tmp"),
// synced, and renamed to path: a build that fails, or a process killed
// while it builds, leaves whatever was at path before. The one exception
// is the last step: if syncing path's directory after the rename fails,
// Build returns that error with the new file, whole, already at path (a
// crash then may bring back the old name's file). The memory it uses is
// the table (8 bytes a bucket) and a buffer of a megabyte.
func Build(path string, tag ledger.Hash, expect uint64, each func(add func(h ledger.Hash, node []byte) error) error) (Header, error) {
	b, err := create(path, tag, expect)
	if err != nil {
		return Header{}, err
	}
	err = each(b.add)
	if err == nil {
		err = b.err // an add that failed, though each went on
	}
	if err != nil {
		b.abort()
		return Header{}, err
	}
	h, err := b.commit()
	if err != nil {
		b.abort()
		return Header{}, err
	}
	return h, nil
}

// builder is a file being written: its entries so far and the table of
// where their buckets start.
type builder struct {
	path, tmp string
	f         *os.File
	w         *bufio.Writer
	h         Header
	table     []uint64 // table[b] for b < next is set
	next      uint64   // the first bucket whose start is not yet known
	last      ledger.Hash
	err       error // the first error add returned; every add after it returns it too
}

// create opens a temporary file beside path for a file of about expect
// nodes, its header left to commit.
func create(path string, tag ledger.Hash, expect uint64) (*builder, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("flatstore: %w", err)
	}
	bits := bucketBits(expect)
	b := &builder{path: path, tmp: tmp, f: f, w: bufio.NewWriterSize(f, writeBufferBytes), h: Header{Tag: tag, Bits: bits}, table: make([]uint64, 1<<bits+1)}
	// The header's place, written last, when what it describes is known.
	if _, err := b.w.Write(make([]byte, headerSize)); err != nil {
		b.abort()
		return nil, fmt.Errorf("flatstore: %w", err)
	}
	return b, nil
}

// add appends the node named h, which must come after every node added
// before it. Once it has failed it adds nothing more and returns its
// first error, which Build returns too.
func (b *builder) add(h ledger.Hash, node []byte) error {
	if b.err == nil {
		b.err = b.append(h, node)
	}
	return b.err
}

// append writes the entry for the node named h.
func (b *builder) append(h ledger.Hash, node []byte) error {
	if b.h.Count > 0 && bytes.Compare(h[:], b.last[:]) <= 0 {
		return fmt.Errorf("flatstore: node %s added after %s: want ascending hashes, each once", h.Hex(), b.last.Hex())
	}
	if uint64(len(node)) > math.MaxUint32 {
		return fmt.Errorf("flatstore: node %s is %d bytes, more than an entry holds", h.Hex(), len(node))
	}
	for bucket := bucketOf(h, b.h.Bits); b.next <= bucket; b.next++ {
		b.table[b.next] = b.h.DataBytes
	}
	var head [entryHead]byte
	copy(head[:], h[:])
	binary.LittleEndian.PutUint32(head[ledger.HashSize:], uint32(len(node)))
	if _, err := b.w.Write(head[:]); err != nil {
		return fmt.Errorf("flatstore: %w", err)
	}
	if _, err := b.w.Write(node); err != nil {
		return fmt.Errorf("flatstore: %w", err)
	}
	b.h.DataBytes += uint64(entryHead + len(node))
	b.h.Count++
	b.last = h
	return nil
}

// commit writes the table and the header, syncs the file and renames it
// to its path.
func (b *builder) commit() (Header, error) {
	for ; b.next < uint64(len(b.table)); b.next++ {
		b.table[b.next] = b.h.DataBytes
	}
	crc := uint32(0)
	var word [8]byte
	for _, off := range b.table {
		binary.LittleEndian.PutUint64(word[:], off)
		crc = crc32.Update(crc, castagnoli, word[:])
		if _, err := b.w.Write(word[:]); err != nil {
			return Header{}, fmt.Errorf("flatstore: %w", err)
		}
	}
	head := encodeHeader(b.h, crc)
	err := b.w.Flush()
	if err == nil {
		_, err = b.f.WriteAt(head[:], 0)
	}
	if err == nil {
		err = b.f.Sync()
	}
	if cerr := b.f.Close(); err == nil {
		err = cerr
	}
	b.f = nil
	if err == nil {
		err = os.Rename(b.tmp, b.path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(b.path))
	}
	if err != nil {
		return Header{}, fmt.Errorf("flatstore: %w", err)
	}
	return b.h, nil
}

// abort closes and removes the temporary file.
func (b *builder) abort() {
	if b.f != nil {
		_ = b.f.Close()
		b.f = nil
	}
	_ = os.Remove(b.tmp)
}

// syncDir syncs a directory, so that a rename in it survives a crash of
// the machine. A file system that cannot sync directories is let be.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) {
		return nil
	}
	return err
}

package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/peersched/peersched/ledger"
)

// Payload layouts (integers big-endian):
//
//	GetObjects: count uint32 | count × hash [32]byte
//	Objects:    count uint32 | count × item
//	item:       hash [32]byte | 0x00 | size uint32 | size bytes   (present)
//	            hash [32]byte | 0x01                              (missing)
//
// Each item carries its hash even though responses follow request order, so a
// response is self-describing: a fetcher matches items by hash and verifies
// them, whatever order or request ID a faulty peer used.

// DefaultMaxItems is the count limit the decoders apply when given zero or
// less: hashes per GetObjects, items per Objects.
const DefaultMaxItems = 4096

const (
	countSize   = 4
	itemPresent = 0x00
	itemMissing = 0x01
	// minItemSize is the smallest encoded item (a missing one). Checking a
	// count against the bytes that remain at this rate bounds the decoder's
	// allocation by the payload's length, whatever the count field says.
	minItemSize = ledger.HashSize + 1
)

// AppendGetObjects appends the payload encoding of m to dst.
func AppendGetObjects(dst []byte, m ledger.GetObjects) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.Hashes)))
	for _, h := range m.Hashes {
		dst = append(dst, h[:]...)
	}
	return dst
}

// GetObjectsSize returns the length of m's payload encoding.
func GetObjectsSize(m ledger.GetObjects) int {
	return countSize + len(m.Hashes)*ledger.HashSize
}

// DecodeGetObjects decodes a TypeGetObjects payload holding at most maxHashes
// hashes (zero or less means DefaultMaxItems). It returns an error wrapping
// ErrOversized if the count is above the limit, or ErrMalformed if the
// payload's length does not match its count.
func DecodeGetObjects(p []byte, maxHashes int) (ledger.GetObjects, error) {
	count, p, err := readCount(p, maxHashes, "GetObjects", "hashes")
	if err != nil {
		return ledger.GetObjects{}, err
	}
	if uint64(len(p)) != uint64(count)*ledger.HashSize {
		return ledger.GetObjects{}, fmt.Errorf("%w: %d hashes in %d bytes", ErrMalformed, count, len(p))
	}
	m := ledger.GetObjects{Hashes: make([]ledger.Hash, count)}
	for i := range m.Hashes {
		m.Hashes[i] = ledger.Hash(p[i*ledger.HashSize:])
	}
	return m, nil
}

// AppendObjects appends the payload encoding of m to dst. An item marked
// Missing is written without its Data.
func AppendObjects(dst []byte, m ledger.Objects) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(m.Items)))
	for _, it := range m.Items {
		dst = append(dst, it.Hash[:]...)
		if it.Missing {
			dst = append(dst, itemMissing)
			continue
		}
		dst = append(dst, itemPresent)
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(it.Data)))
		dst = append(dst, it.Data...)
	}
	return dst
}

// ObjectsSize returns the length of m's payload encoding. Simulated networks
// use it to charge a response's bandwidth as TCP would.
func ObjectsSize(m ledger.Objects) int {
	n := countSize
	for _, it := range m.Items {
		n += minItemSize
		if !it.Missing {
			n += 4 + len(it.Data)
		}
	}
	return n
}

// DecodeObjects decodes a TypeObjects payload holding at most maxItems items
// (zero or less means DefaultMaxItems). Each present item's Data aliases p; a
// missing item has nil Data. It returns an error wrapping ErrOversized if the
// count is above the limit, or ErrMalformed for a count the payload cannot
// hold, a truncated item, an unknown item flag or trailing bytes. Its
// allocation is bounded by len(p), whatever the count field claims.
func DecodeObjects(p []byte, maxItems int) (ledger.Objects, error) {
	count, p, err := readCount(p, maxItems, "Objects", "items")
	if err != nil {
		return ledger.Objects{}, err
	}
	if uint64(count)*minItemSize > uint64(len(p)) {
		return ledger.Objects{}, fmt.Errorf("%w: %d items cannot fit in %d bytes", ErrMalformed, count, len(p))
	}
	m := ledger.Objects{Items: make([]ledger.Object, count)}
	for i := range m.Items {
		if len(p) < minItemSize {
			return ledger.Objects{}, fmt.Errorf("%w: item %d truncated", ErrMalformed, i)
		}
		it := &m.Items[i]
		it.Hash = ledger.Hash(p)
		flag := p[ledger.HashSize]
		p = p[minItemSize:]
		switch flag {
		case itemMissing:
			it.Missing = true
		case itemPresent:
			if len(p) < 4 {
				return ledger.Objects{}, fmt.Errorf("%w: item %d truncated", ErrMalformed, i)
			}
			size := binary.BigEndian.Uint32(p)
			p = p[4:]
			if uint64(size) > uint64(len(p)) {
				return ledger.Objects{}, fmt.Errorf("%w: item %d claims %d bytes, %d left", ErrMalformed, i, size, len(p))
			}
			it.Data = p[:size:size]
			p = p[size:]
		default:
			return ledger.Objects{}, fmt.Errorf("%w: item %d has flag %#x", ErrMalformed, i, flag)
		}
	}
	if len(p) != 0 {
		return ledger.Objects{}, fmt.Errorf("%w: %d trailing bytes", ErrMalformed, len(p))
	}
	return m, nil
}

// readCount reads the count that opens a payload of the given message and
// checks it against limit (zero or less means DefaultMaxItems), returning the
// count and the rest of the payload. A payload too short for the count is
// ErrMalformed; a count above the limit is ErrOversized, reported before
// anything is allocated for it.
func readCount(p []byte, limit int, message, things string) (uint32, []byte, error) {
	if limit <= 0 {
		limit = DefaultMaxItems
	}
	if len(p) < countSize {
		return 0, nil, fmt.Errorf("%w: %s payload of %d bytes", ErrMalformed, message, len(p))
	}
	count := binary.BigEndian.Uint32(p)
	if uint64(count) > uint64(limit) {
		return 0, nil, fmt.Errorf("%w: %d %s, limit %d", ErrOversized, count, things, limit)
	}
	return count, p[countSize:], nil
}

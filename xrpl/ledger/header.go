package ledger

import "encoding/binary"

// Header is an XRP Ledger ledger header: what a ledger's hash covers. Its
// AccountHash is the root of the ledger's state map.
type Header struct {
	Seq                 uint32 // ledger_index
	TotalCoins          uint64 // drops of XRP in existence
	ParentHash          Hash
	TransactionHash     Hash
	AccountHash         Hash
	ParentCloseTime     uint32 // seconds since 2000-01-01 00:00 UTC
	CloseTime           uint32
	CloseTimeResolution uint8 // seconds
	CloseFlags          uint8
}

// headerSize is the serialized header that Hash hashes, prefix included.
const headerSize = prefixSize + 4 + 8 + 3*HashSize + 4 + 4 + 1 + 1

// Hash returns the ledger hash: the SHA512Half of "LWR\x00" and the fields in
// the order declared, integers big-endian.
func (h Header) Hash() Hash {
	b := make([]byte, 0, headerSize)
	b = append(b, prefixLedger[:]...)
	b = binary.BigEndian.AppendUint32(b, h.Seq)
	b = binary.BigEndian.AppendUint64(b, h.TotalCoins)
	b = append(b, h.ParentHash[:]...)
	b = append(b, h.TransactionHash[:]...)
	b = append(b, h.AccountHash[:]...)
	b = binary.BigEndian.AppendUint32(b, h.ParentCloseTime)
	b = binary.BigEndian.AppendUint32(b, h.CloseTime)
	b = append(b, h.CloseTimeResolution, h.CloseFlags)
	return HashOf(b)
}

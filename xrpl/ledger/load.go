package ledger

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ErrHashMismatch is returned by Load when the file's entries or header do
// not hash to the hashes it states; the error says which.
var ErrHashMismatch = errors.New("ledger: hash mismatch")

// ErrBadFile is returned by Load for a file that is not a ledger file.
var ErrBadFile = errors.New("ledger: bad ledger file")

// ledgerFile is the JSON layout Load reads: a header as the XRP Ledger's
// APIs print one, with the ledger hash it claims, and the state map's
// entries, key and canonical binary in hex.
type ledgerFile struct {
	Header struct {
		LedgerIndex         jsonUint `json:"ledger_index"`
		TotalCoins          jsonUint `json:"total_coins"`
		ParentHash          string   `json:"parent_hash"`
		TransactionHash     string   `json:"transaction_hash"`
		AccountHash         string   `json:"account_hash"`
		ParentCloseTime     jsonUint `json:"parent_close_time"`
		CloseTime           jsonUint `json:"close_time"`
		CloseTimeResolution jsonUint `json:"close_time_resolution"`
		CloseFlags          jsonUint `json:"close_flags"`
		LedgerHash          string   `json:"ledger_hash"`
	} `json:"header"`
	State []struct {
		Key  string `json:"key"`
		Data string `json:"data"`
	} `json:"state"`
}

// jsonUint is an unsigned integer written as a JSON number or, as the XRP
// Ledger's APIs write total_coins, a decimal string.
type jsonUint uint64

func (u *jsonUint) UnmarshalJSON(b []byte) error {
	s := string(b)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	*u = jsonUint(n)
	return err
}

// LoadFile is Load of the file at path. A file that cannot be opened gives
// the os package's error (errors.Is(err, fs.ErrNotExist) for a missing one).
func LoadFile(path string) (*Ledger, Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Header{}, err
	}
	defer f.Close()
	l, h, err := Load(f)
	if err != nil {
		return nil, Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return l, h, nil
}

// Load reads a real ledger, its header and the entries of its state map, as
// JSON: {"header": {ledger_index, total_coins, parent_hash, transaction_hash,
// account_hash, parent_close_time, close_time, close_time_resolution,
// close_flags, ledger_hash}, "state": [{"key", "data"}, ...]}, hashes and
// data in hex. It builds the state map (see Build) and checks it: the map's
// root must be the header's account_hash, and the header must hash to its
// ledger_hash. Either mismatch is an error wrapping ErrHashMismatch that
// names the hash and both values; a malformed file is an error wrapping
// ErrBadFile (or ErrDuplicateKey). The returned ledger's Root is then the
// verified account_hash.
func Load(r io.Reader) (*Ledger, Header, error) {
	var f ledgerFile
	if err := json.NewDecoder(r).Decode(&f); err != nil {
		return nil, Header{}, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	h, claimed, err := f.header()
	if err != nil {
		return nil, Header{}, err
	}
	entries := make([]Entry, len(f.State))
	for i, e := range f.State {
		key, err := ParseHash(e.Key)
		if err != nil {
			return nil, Header{}, fmt.Errorf("%w: entry %d: key %q: %v", ErrBadFile, i, e.Key, err)
		}
		data, err := hex.DecodeString(e.Data)
		if err != nil {
			return nil, Header{}, fmt.Errorf("%w: entry %d: data: %v", ErrBadFile, i, err)
		}
		entries[i] = Entry{Key: key, Data: data}
	}
	l, err := Build(entries)
	if err != nil {
		return nil, Header{}, err
	}
	if l.Root() != h.AccountHash {
		return nil, Header{}, fmt.Errorf("%w: account_hash: the %d entries hash to %s, the header says %s",
			ErrHashMismatch, len(entries), l.Root().Hex(), h.AccountHash.Hex())
	}
	if got := h.Hash(); got != claimed {
		return nil, Header{}, fmt.Errorf("%w: ledger_hash: the header hashes to %s, the file says %s",
			ErrHashMismatch, got.Hex(), claimed.Hex())
	}
	return l, h, nil
}

// header converts the file's header, returning it and the ledger hash the
// file claims for it.
func (f *ledgerFile) header() (Header, Hash, error) {
	fh := &f.Header
	var h Header
	var claimed Hash
	for _, x := range []struct {
		name string
		hex  string
		dst  *Hash
	}{
		{"parent_hash", fh.ParentHash, &h.ParentHash},
		{"transaction_hash", fh.TransactionHash, &h.TransactionHash},
		{"account_hash", fh.AccountHash, &h.AccountHash},
		{"ledger_hash", fh.LedgerHash, &claimed},
	} {
		v, err := ParseHash(x.hex)
		if err != nil {
			return Header{}, Hash{}, fmt.Errorf("%w: header %s %q: %v", ErrBadFile, x.name, x.hex, err)
		}
		*x.dst = v
	}
	for _, x := range []struct {
		name string
		v    jsonUint
		max  uint64
	}{
		{"ledger_index", fh.LedgerIndex, 1<<32 - 1},
		{"parent_close_time", fh.ParentCloseTime, 1<<32 - 1},
		{"close_time", fh.CloseTime, 1<<32 - 1},
		{"close_time_resolution", fh.CloseTimeResolution, 255},
		{"close_flags", fh.CloseFlags, 255},
	} {
		if uint64(x.v) > x.max {
			return Header{}, Hash{}, fmt.Errorf("%w: header %s %d above %d", ErrBadFile, x.name, x.v, x.max)
		}
	}
	h.Seq = uint32(fh.LedgerIndex)
	h.TotalCoins = uint64(fh.TotalCoins)
	h.ParentCloseTime = uint32(fh.ParentCloseTime)
	h.CloseTime = uint32(fh.CloseTime)
	h.CloseTimeResolution = uint8(fh.CloseTimeResolution)
	h.CloseFlags = uint8(fh.CloseFlags)
	return h, claimed, nil
}

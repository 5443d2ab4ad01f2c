package ledger

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
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
	Header fileHeader `json:"header"`
	State  []struct {
		Key  string `json:"key"`
		Data string `json:"data"`
	} `json:"state"` // nil if the file has none (or null)
}

// fileHeader is a ledger file's header. It remembers which fields the file
// gave, so that a missing one is not read as zero.
type fileHeader struct {
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

	given map[string]bool // the fields present and not null, by lower-case name; nil without a header
}

// requiredFields are the header fields a ledger file must give: every one
// but close_flags, which ledgers from before the field existed lack (it is
// then 0, as those ledgers hashed it).
var requiredFields = []string{
	"ledger_index", "total_coins", "parent_hash", "transaction_hash", "account_hash",
	"parent_close_time", "close_time", "close_time_resolution", "ledger_hash",
}

// UnmarshalJSON decodes the header and notes which fields it gives. A JSON
// null leaves h as it is: no header.
func (h *fileHeader) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	type plain fileHeader // its fields, without this method
	if err := json.Unmarshal(b, (*plain)(h)); err != nil {
		return namedFieldError(fields, err)
	}
	h.given = make(map[string]bool, len(fields))
	for k, v := range fields {
		if string(v) != "null" {
			h.given[strings.ToLower(k)] = true // encoding/json matches names regardless of case
		}
	}
	return nil
}

// namedFieldError returns err, which decoding a header of the given fields
// returned, with the name of the numeric field that caused it: encoding/json
// passes a field's own UnmarshalJSON error on without saying whose it was.
func namedFieldError(fields map[string]json.RawMessage, err error) error {
	for k, v := range fields {
		var u jsonUint
		if slices.Contains(numericFields, strings.ToLower(k)) && u.UnmarshalJSON(v) != nil {
			return fmt.Errorf("header %s %s: %w", k, v, err)
		}
	}
	return err
}

// numericFields are the header's fields that are jsonUints.
var numericFields = []string{"ledger_index", "total_coins", "parent_close_time", "close_time", "close_time_resolution", "close_flags"}

// jsonUint is an unsigned integer written as a JSON number or, as the XRP
// Ledger's APIs write total_coins, a decimal string.
type jsonUint uint64

// UnmarshalJSON leaves u as it is for a JSON null, as encoding/json does
// for its own types: the header then finds the field not given.
func (u *jsonUint) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
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
// data in hex. Every header field is required but close_flags, which is 0
// when left out (ledgers from before the field existed lack it). It builds
// the state map (see Build) and checks it: the map's root must be the
// header's account_hash, and the header must hash to its ledger_hash.
// Either mismatch is an error wrapping ErrHashMismatch that names the hash
// and both values; a malformed file is an error wrapping ErrBadFile (or
// ErrDuplicateKey): one that is not JSON, lacks the header, a required
// header field (or gives it as null) or the state, or gives a value that
// does not parse or fit, and the error names what. The returned ledger's
// Root is then the verified account_hash.
func Load(r io.Reader) (*Ledger, Header, error) {
	var f ledgerFile
	dec := json.NewDecoder(r)
	if err := dec.Decode(&f); err != nil {
		return nil, Header{}, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, Header{}, fmt.Errorf("%w: more after the ledger's JSON object", ErrBadFile)
	}
	h, claimed, err := f.header()
	if err != nil {
		return nil, Header{}, err
	}
	if f.State == nil {
		return nil, Header{}, fmt.Errorf("%w: no state", ErrBadFile)
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
	if fh.given == nil {
		return Header{}, Hash{}, fmt.Errorf("%w: no header", ErrBadFile)
	}
	var missing []string
	for _, name := range requiredFields {
		if !fh.given[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return Header{}, Hash{}, fmt.Errorf("%w: header lacks %s", ErrBadFile, strings.Join(missing, ", "))
	}
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

package ledger

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/peersched/peersched/xrpl/internal/fixtures"
)

func mustHash(t testing.TB, s string) Hash {
	t.Helper()
	h, err := ParseHash(s)
	require.NoError(t, err)
	return h
}

// TestLoadRealLedgers rebuilds both real ledgers' state maps from their
// entries and matches the account_hash and the ledger hash of each.
func TestLoadRealLedgers(t *testing.T) {
	for _, c := range []struct {
		file        string
		seq         uint32
		accountHash string
		ledgerHash  string // "" where the issue lists none: Load still checks the file's
	}{
		{fixtures.Ledger38129, 38129, fixtures.AccountHash38129, fixtures.LedgerHash38129},
		{fixtures.Ledger40000, 40000, fixtures.AccountHash40000, ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			l, h, err := LoadFile(fixtures.Ledger(t, c.file))
			require.NoError(t, err)
			require.Equal(t, c.seq, h.Seq)
			require.Equal(t, mustHash(t, c.accountHash), l.Root(), "the rebuilt state map's root")
			require.Equal(t, mustHash(t, c.accountHash), h.AccountHash)
			if c.ledgerHash != "" {
				require.Equal(t, mustHash(t, c.ledgerHash), h.Hash(), "the header's hash")
			}
			seen, leaves := walk(t, l)
			require.Equal(t, l.Len(), len(seen))
			require.Equal(t, l.Leaves(), leaves)
		})
	}
}

// TestRealLedgersDiffer: between ledgers 38129 and 40000 only a handful of
// nodes differ: two leaves and the inner nodes above them. This is what an
// incremental fetch of 40000 from a copy of 38129 downloads.
func TestRealLedgersDiffer(t *testing.T) {
	old, _, err := LoadFile(fixtures.Ledger(t, fixtures.Ledger38129))
	require.NoError(t, err)
	cur, _, err := LoadFile(fixtures.Ledger(t, fixtures.Ledger40000))
	require.NoError(t, err)
	var leaves, inner int
	for h := range cur.Hashes() {
		if _, ok := old.Get(h); ok {
			continue
		}
		data, _ := cur.Get(h)
		n, err := Decode(data)
		require.NoError(t, err)
		if n.Kind == Leaf {
			leaves++
		} else {
			inner++
		}
	}
	require.Equal(t, 2, leaves, "changed leaves")
	// Pinned after counting: one leaf sits at depth 2 (under the root and
	// one inner node), the other at depth 3 (under the root and two), and
	// the paths share only the root.
	require.Equal(t, 4, inner, "changed inner nodes")
}

// TestEntrySizesMeasured: Generate's size distribution is the histogram of
// the real ledgers' entries, the several-KB skip lists pooled.
func TestEntrySizesMeasured(t *testing.T) {
	for _, file := range []string{fixtures.Ledger38129, fixtures.Ledger40000} {
		f := readLedgerFile(t, fixtures.Ledger(t, file))
		counts := map[int]int{}
		for _, e := range f.State {
			size := len(e.Data) / 2
			if size >= largeMin {
				require.LessOrEqual(t, size, MaxPayload)
				size = largeEntry
			}
			counts[size]++
		}
		for _, c := range entrySizes {
			require.Equal(t, c.count, counts[c.size], "%s: entries of %d bytes", file, c.size)
			delete(counts, c.size)
		}
		require.Empty(t, counts, "%s: sizes the table lacks", file)
	}
}

// TestGeneratedSizesFollowTheTable: a large generated ledger's entry sizes
// come out in the table's proportions.
func TestGeneratedSizesFollowTheTable(t *testing.T) {
	l, err := Generate(3, 100_000)
	require.NoError(t, err)
	counts := map[int]int{}
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		if n, _ := Decode(data); n.Kind == Leaf {
			size := len(n.Payload)
			if size >= largeMin {
				size = largeEntry
			}
			counts[size]++
		}
	}
	for _, c := range entrySizes {
		want := float64(l.Leaves()) * float64(c.count) / float64(entrySizeTotal)
		// Binomial counts: within five standard deviations (at most
		// sqrt(want)), plus one for the rare sizes.
		require.InDelta(t, want, float64(counts[c.size]), 5*sqrtOf(want)+1, "entries of %d bytes", c.size)
		delete(counts, c.size)
	}
	require.Empty(t, counts)
}

func sqrtOf(x float64) float64 {
	r := x
	for range 50 {
		r = (r + x/r) / 2
	}
	return r
}

// TestSingleByteChangesRoot: changing any one byte of an entry changes the
// root: of a small map made here, and of a real ledger, for which Load then
// reports the account_hash mismatch.
func TestSingleByteChangesRoot(t *testing.T) {
	check := func(t *testing.T, entries []Entry, want Hash) {
		t.Helper()
		for i := range entries {
			for _, at := range []int{0, len(entries[i].Data) / 2, len(entries[i].Data) - 1} {
				changed := slices.Clone(entries)
				d := slices.Clone(entries[i].Data)
				d[at] ^= 0x01
				changed[i].Data = d
				l, err := Build(changed)
				require.NoError(t, err)
				require.NotEqual(t, want, l.Root(), "entry %d byte %d", i, at)
			}
		}
	}
	t.Run("made here", func(t *testing.T) {
		f := synthetic(t)
		entries := f.entries(t)
		l, err := Build(entries)
		require.NoError(t, err)
		check(t, entries, l.Root())
	})
	t.Run("ledger 38129", func(t *testing.T) {
		f := readLedgerFile(t, fixtures.Ledger(t, fixtures.Ledger38129))
		check(t, f.entries(t), mustHash(t, fixtures.AccountHash38129))

		f.State[17].Data = flipHexByte(f.State[17].Data, 5)
		_, _, err := Load(bytes.NewReader(mustJSON(t, f)))
		require.ErrorIs(t, err, ErrHashMismatch)
		require.Contains(t, err.Error(), "account_hash")
	})
}

// TestHeaderFieldChangesLedgerHash: every header field is covered by the
// ledger hash, and Load says so when the header does not match it.
func TestHeaderFieldChangesLedgerHash(t *testing.T) {
	h := Header{Seq: 7, TotalCoins: 1e17, ParentCloseTime: 1, CloseTime: 2, CloseTimeResolution: 10, CloseFlags: 0}
	base := h.Hash()
	changes := []func(*Header){
		func(h *Header) { h.Seq++ },
		func(h *Header) { h.TotalCoins-- },
		func(h *Header) { h.ParentHash[31] ^= 1 },
		func(h *Header) { h.TransactionHash[0] ^= 1 },
		func(h *Header) { h.AccountHash[5] ^= 1 },
		func(h *Header) { h.ParentCloseTime++ },
		func(h *Header) { h.CloseTime++ },
		func(h *Header) { h.CloseTimeResolution++ },
		func(h *Header) { h.CloseFlags++ },
	}
	for i, change := range changes {
		c := h
		change(&c)
		require.NotEqual(t, base, c.Hash(), "change %d", i)
	}

	f := synthetic(t)
	f.Header.CloseTime++
	_, _, err := Load(bytes.NewReader(mustJSON(t, f)))
	require.ErrorIs(t, err, ErrHashMismatch)
	require.Contains(t, err.Error(), "ledger_hash")
}

// synthetic is a small consistent ledger file, made here so the error tests
// need no fixture.
func synthetic(t *testing.T) *ledgerFile {
	var f ledgerFile
	var entries []Entry
	for i := range 20 {
		e := Entry{Key: HashOf([]byte{byte(i)}), Data: bytes.Repeat([]byte{byte(i)}, 10+i)}
		entries = append(entries, e)
		f.State = append(f.State, struct {
			Key  string `json:"key"`
			Data string `json:"data"`
		}{strings.ToUpper(e.Key.Hex()), hex.EncodeToString(e.Data)})
	}
	l, err := Build(entries)
	require.NoError(t, err)
	h := Header{Seq: 9, TotalCoins: 100, AccountHash: l.Root(), CloseTime: 5, CloseTimeResolution: 10}
	fh := &f.Header
	fh.LedgerIndex, fh.TotalCoins, fh.CloseTime, fh.CloseTimeResolution = 9, 100, 5, 10
	fh.ParentHash, fh.TransactionHash = Hash{}.Hex(), Hash{}.Hex()
	fh.AccountHash, fh.LedgerHash = l.Root().Hex(), h.Hash().Hex()
	return &f
}

func TestLoadSynthetic(t *testing.T) {
	l, h, err := Load(bytes.NewReader(mustJSON(t, synthetic(t))))
	require.NoError(t, err)
	require.Equal(t, 20, l.Leaves())
	require.Equal(t, uint32(9), h.Seq)
	require.Equal(t, h.AccountHash, l.Root())
}

func TestLoadErrors(t *testing.T) {
	cases := map[string]struct {
		edit func(f *ledgerFile)
		raw  string
		want error
	}{
		"not JSON":         {raw: "{", want: ErrBadFile},
		"bad key":          {edit: func(f *ledgerFile) { f.State[0].Key = "xyz" }, want: ErrBadFile},
		"bad data":         {edit: func(f *ledgerFile) { f.State[0].Data = "0g" }, want: ErrBadFile},
		"bad header hash":  {edit: func(f *ledgerFile) { f.Header.ParentHash = "00" }, want: ErrBadFile},
		"seq above 32 bit": {edit: func(f *ledgerFile) { f.Header.LedgerIndex = 1 << 32 }, want: ErrBadFile},
		"flags above 255":  {edit: func(f *ledgerFile) { f.Header.CloseFlags = 256 }, want: ErrBadFile},
		"duplicate key":    {edit: func(f *ledgerFile) { f.State[1].Key = f.State[0].Key }, want: ErrDuplicateKey},
		"entry left out":   {edit: func(f *ledgerFile) { f.State = f.State[1:] }, want: ErrHashMismatch},
		"wrong ledger_hash": {edit: func(f *ledgerFile) {
			f.Header.LedgerHash = Hash{1}.Hex()
		}, want: ErrHashMismatch},
		"string seq": {raw: `{"header": {"ledger_index": "x"}}`, want: ErrBadFile},
	}
	// The error names the field whose value does not parse, and a file
	// with more after its JSON object is not one ledger file.
	_, _, err := Load(strings.NewReader(`{"header": {"ledger_index": "abc"}, "state": []}`))
	require.ErrorIs(t, err, ErrBadFile)
	require.Contains(t, err.Error(), "ledger_index")
	whole := mustJSON(t, synthetic(t))
	_, _, err = Load(bytes.NewReader(append(whole, " {}"...)))
	require.ErrorIs(t, err, ErrBadFile, "trailing data")
	_, _, err = Load(bytes.NewReader(append(whole, "\n"...)))
	require.NoError(t, err, "a trailing newline is no data")
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			input := []byte(c.raw)
			if c.edit != nil {
				f := synthetic(t)
				c.edit(f)
				input = mustJSON(t, f)
			}
			l, _, err := Load(bytes.NewReader(input))
			require.ErrorIs(t, err, c.want)
			require.Nil(t, l)
		})
	}
	_, _, err = LoadFile("no-such-ledger.json")
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestLoadMissingFields: a file without its header, a required header
// field (or with it null) or its state is a bad file, and the error names
// what is missing, where each was once read as zero and reported as a hash
// mismatch. Only close_flags may be left out: it is then 0.
func TestLoadMissingFields(t *testing.T) {
	without := func(t *testing.T, edit func(header, file map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(mustJSON(t, synthetic(t)), &m))
		edit(m["header"].(map[string]any), m)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		return b
	}
	for _, c := range []struct {
		name string
		edit func(header, file map[string]any)
		want string
	}{
		{"no header", func(_, f map[string]any) { delete(f, "header") }, "no header"},
		{"null header", func(_, f map[string]any) { f["header"] = nil }, "no header"},
		{"no state", func(_, f map[string]any) { delete(f, "state") }, "no state"},
		{"total_coins", func(h, _ map[string]any) { delete(h, "total_coins") }, "header lacks total_coins"},
		{"ledger_index null", func(h, _ map[string]any) { h["ledger_index"] = nil }, "header lacks ledger_index"},
		{"two hashes", func(h, _ map[string]any) { delete(h, "parent_hash"); delete(h, "ledger_hash") }, "header lacks parent_hash, ledger_hash"},
		{"close_time_resolution", func(h, _ map[string]any) { delete(h, "close_time_resolution") }, "header lacks close_time_resolution"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, _, err := Load(bytes.NewReader(without(t, c.edit)))
			require.ErrorIs(t, err, ErrBadFile)
			require.NotErrorIs(t, err, ErrHashMismatch)
			require.ErrorContains(t, err, c.want)
			require.Nil(t, l)
		})
	}
	t.Run("close_flags", func(t *testing.T) {
		_, h, err := Load(bytes.NewReader(without(t, func(h, _ map[string]any) { delete(h, "close_flags") })))
		require.NoError(t, err)
		require.Zero(t, h.CloseFlags)
	})
	t.Run("LoadFile names the file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ledger.json")
		require.NoError(t, os.WriteFile(path, without(t, func(h, _ map[string]any) { delete(h, "close_time") }), 0o600))
		_, _, err := LoadFile(path)
		require.ErrorIs(t, err, ErrBadFile)
		require.ErrorContains(t, err, path+": ledger: bad ledger file: header lacks close_time")
	})
}

func TestJSONUintAcceptsStrings(t *testing.T) {
	var v struct{ A, B jsonUint }
	require.NoError(t, json.Unmarshal([]byte(`{"A": 12, "B": "99999999999996310"}`), &v))
	require.Equal(t, jsonUint(12), v.A)
	require.Equal(t, jsonUint(99999999999996310), v.B)
}

// TestBuildEmptyAndOrder: an empty map's root is the zero hash, and the
// order entries are given in does not matter.
func TestBuildEmptyAndOrder(t *testing.T) {
	l, err := Build(nil)
	require.NoError(t, err)
	require.Equal(t, Hash{}, l.Root())
	require.Equal(t, 0, l.Len())

	var entries []Entry
	for i := range 50 {
		entries = append(entries, Entry{Key: HashOf([]byte(fmt.Sprint(i))), Data: bytes.Repeat([]byte{byte(i)}, MinPayload)})
	}
	a, err := Build(entries)
	require.NoError(t, err)
	slices.Reverse(entries)
	b, err := Build(entries)
	require.NoError(t, err)
	require.Equal(t, a.Root(), b.Root())
	walk(t, a)
}

func readLedgerFile(t *testing.T, path string) *ledgerFile {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var f ledgerFile
	require.NoError(t, json.Unmarshal(raw, &f))
	return &f
}

func (f *ledgerFile) entries(t *testing.T) []Entry {
	t.Helper()
	var out []Entry
	for _, e := range f.State {
		data, err := hex.DecodeString(e.Data)
		require.NoError(t, err)
		out = append(out, Entry{Key: mustHash(t, e.Key), Data: data})
	}
	return out
}

func flipHexByte(s string, i int) string {
	b, _ := hex.DecodeString(s)
	b[i] ^= 0x01
	return hex.EncodeToString(b)
}

func mustJSON(t *testing.T, f *ledgerFile) []byte {
	t.Helper()
	// jsonUint decodes from numbers; encode it as one.
	b, err := json.Marshal(f)
	require.NoError(t, err)
	return b
}

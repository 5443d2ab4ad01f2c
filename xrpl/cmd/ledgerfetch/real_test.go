package main

import (
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/internal/fixtures"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// realReport is the part of the JSON report the real-ledger tests check.
type realReport struct {
	Complete    bool   `json:"complete"`
	Objects     int    `json:"objects"`
	Reused      int    `json:"reused"`
	Transport   string `json:"transport"`
	Strategy    string `json:"strategy"`
	LedgerIndex uint32 `json:"ledger_index"`
	AccountHash string `json:"account_hash"`
	RebuiltRoot string `json:"rebuilt_root"`
	Verified    *bool  `json:"account_hash_verified"`
	BaseIndex   uint32 `json:"base_ledger_index"`
}

func decodeReal(t *testing.T, stdout string) realReport {
	t.Helper()
	return decodeOne[realReport](t, stdout)
}

// TestRealLedger: -ledger serves and fetches ledger 38129 on every transport
// and strategy, with and without chaos, and the report states, in text and
// in JSON, that the fetched state rebuilds to the real account_hash.
func TestRealLedger(t *testing.T) {
	file := fixtures.Ledger(t, fixtures.Ledger38129)
	for _, extra := range [][]string{
		{},
		{"-chaos"},
		{"-transport", "mem"},
		{"-transport", "mem", "-chaos"},
		{"-strategy", "peerset"},
	} {
		t.Run(strings.Join(append([]string{"default"}, extra...), " "), func(t *testing.T) {
			a := append([]string{"-ledger", file, "-json"}, extra...)
			code, stdout, stderr := runCmd(t, a...)
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr)
			}
			r := decodeReal(t, stdout)
			if !r.Complete || r.Objects != 406 || r.LedgerIndex != 38129 || r.AccountHash != fixtures.AccountHash38129 ||
				r.RebuiltRoot != fixtures.AccountHash38129 || r.Verified == nil || !*r.Verified {
				t.Fatalf("report %+v", r)
			}
		})
	}
	code, stdout, stderr := runCmd(t, "-ledger", file)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	if want := "account_hash " + fixtures.AccountHash38129 + " verified"; !strings.Contains(stdout, want) {
		t.Fatalf("text report lacks %q:\n%s", want, stdout)
	}
}

// TestIncrementalFetch: -base 38129 -ledger 40000 fetches the 6 nodes that
// changed, reuses the other 400, and verifies ledger 40000's account_hash.
func TestIncrementalFetch(t *testing.T) {
	base := fixtures.Ledger(t, fixtures.Ledger38129)
	file := fixtures.Ledger(t, fixtures.Ledger40000)
	for _, transport := range []string{"tcp", "mem"} {
		code, stdout, stderr := runCmd(t, "-base", base, "-ledger", file, "-transport", transport, "-json")
		if code != 0 {
			t.Fatalf("%s: exit %d\nstderr: %s", transport, code, stderr)
		}
		r := decodeReal(t, stdout)
		// Pinned after verifying: the 2 changed leaves and the 4 inner
		// nodes above them (see ledger.TestRealLedgersDiffer).
		if !r.Complete || r.Objects != 6 || r.Reused != 400 || r.BaseIndex != 38129 || r.LedgerIndex != 40000 ||
			r.RebuiltRoot != fixtures.AccountHash40000 || r.Verified == nil || !*r.Verified {
			t.Fatalf("%s: report %+v", transport, r)
		}
	}
	code, stdout, _ := runCmd(t, "-base", base, "-ledger", file)
	if code != 0 || !strings.Contains(stdout, "400 objects reused") || !strings.Contains(stdout, "6 fetched") ||
		!strings.Contains(stdout, fixtures.AccountHash40000+" verified") {
		t.Fatalf("exit %d, text report:\n%s", code, stdout)
	}
}

// TestRealLedgerMismatch: peers serving another ledger than the file (here
// ledger 40000's nodes, asked for by 38129's root) cannot complete the fetch,
// and the command exits 1.
func TestRealLedgerMismatch(t *testing.T) {
	other, _, err := ledger.LoadFile(fixtures.Ledger(t, fixtures.Ledger40000))
	if err != nil {
		t.Fatal(err)
	}
	s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: other})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	code, stdout, stderr := runCmd(t, "-connect", s.Addr(), "-ledger", fixtures.Ledger(t, fixtures.Ledger38129), "-stall", "500ms", "-json")
	if code != 1 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	r := decodeReal(t, stdout)
	if r.Complete || r.Verified != nil || r.AccountHash != fixtures.AccountHash38129 {
		t.Fatalf("report %+v", r)
	}
}

// TestConnectRealLedger: -connect with -ledger fetches a real ledger from
// running peers serving the same file.
func TestConnectRealLedger(t *testing.T) {
	file := fixtures.Ledger(t, fixtures.Ledger38129)
	l, _, err := ledger.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd(t, "-connect", serveLedger(t, 2, l), "-ledger", file, "-json")
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr)
	}
	if r := decodeReal(t, stdout); r.Verified == nil || !*r.Verified || r.Transport != "tcp (external peers)" {
		t.Fatalf("report %+v", r)
	}
}

// TestAccountHashCheck: the check rebuilds the state map from the fetched
// nodes and the base's, and says so when its root is not the account_hash,
// or when a node is missing; an incomplete fetch is not checked.
func TestAccountHashCheck(t *testing.T) {
	l := smallLedger(t, 3)
	all := &fetch.MemStore{}
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		all.Put(h, data)
	}
	hd := ledger.Header{Seq: 9, AccountHash: l.Root()}
	src := source{ledger: l, header: &hd}
	o := options{ledger: "made-here.json"}

	var r result
	r.checkAccountHash(o, src, all, true)
	if r.Verified == nil || !*r.Verified || r.RebuiltRoot != strings.ToUpper(l.Root().Hex()) {
		t.Fatalf("%+v", r)
	}

	wrong := ledger.Header{Seq: 9, AccountHash: ledger.Hash{1}}
	r = result{}
	r.checkAccountHash(o, source{ledger: l, header: &wrong}, all, true)
	if r.Verified == nil || *r.Verified || !strings.Contains(r.VerifyError, "rebuilds to") {
		t.Fatalf("%+v", r)
	}
	var out strings.Builder
	writeReport(&out, r)
	if !strings.Contains(out.String(), "NOT VERIFIED") {
		t.Fatalf("text report:\n%s", out.String())
	}

	r = result{}
	r.checkAccountHash(o, src, &fetch.MemStore{}, true)
	if r.Verified == nil || *r.Verified || !strings.Contains(r.VerifyError, "neither fetched nor in the base") {
		t.Fatalf("%+v", r)
	}
	r = result{}
	r.checkAccountHash(o, src, &fetch.MemStore{}, false)
	if r.Verified != nil || r.AccountHash == "" {
		t.Fatalf("an incomplete fetch was checked: %+v", r)
	}
}

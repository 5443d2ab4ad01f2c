package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// TestStoreFlags: -root, -expect and -store are checked against each other
// and the other flags, each error naming its flag.
func TestStoreFlags(t *testing.T) {
	root := strings.Repeat("ab", 32)
	for _, c := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{[]string{"-connect", "127.0.0.1:1", "-root", root, "-expect", "9"}, ""},
		{[]string{"-store", "mem", "-strategy", "both"}, ""},
		{[]string{"-root", root}, "-root needs -connect"},
		{[]string{"-connect", "127.0.0.1:1", "-root", "xyz"}, "-root \"xyz\""},
		{[]string{"-connect", "127.0.0.1:1", "-root", strings.Repeat("00", 32)}, "-root"},
		{[]string{"-connect", "127.0.0.1:1", "-root", root, "-ledger", "x.json"}, "-root and -ledger"},
		{[]string{"-expect", "9"}, "-expect 9 needs -root"},
		{[]string{"-connect", "127.0.0.1:1", "-root", root, "-expect", "-1"}, "-expect -1"},
		{[]string{"-store", "/tmp/x", "-strategy", "both"}, "-store /tmp/x with -strategy both"},
	} {
		o, err := parseOptions(c.args, &bytes.Buffer{})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.want != "" && (!errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q: error %v, want one saying %q", c.args, err, c.want)
		case c.want == "" && c.args[0] == "-connect" && o.root.Hex() != root:
			t.Errorf("%q: root %s", c.args, o.root.Hex())
		}
	}
}

// TestOpenStore: the default store is a temporary directory that close
// removes; -store DIR stays; -store mem is no directory at all.
func TestOpenStore(t *testing.T) {
	tmp, err := openStore("")
	if err != nil {
		t.Fatal(err)
	}
	if err := tmp.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp.dir); !os.IsNotExist(err) {
		t.Fatalf("the temporary store %s is still there (%v)", tmp.dir, err)
	}

	dir := t.TempDir() + "/kept"
	kept, err := openStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.Write(nil); err != nil {
		t.Fatal(err)
	}
	if err := kept.close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("-store's directory is gone: %v", err)
	}

	mem, err := openStore(memStore)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mem.Get(ledger.Hash{1}); ok || mem.close() != nil {
		t.Fatal("the in-memory store is not empty, or fails to close")
	}
}

// TestCompactOnlyKeptStores: a store on disk that -store names is
// compacted; a temporary one, removed unread, and one in memory are not.
func TestCompactOnlyKeptStores(t *testing.T) {
	l, err := ledger.Generate(1, 100)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []fetch.Node
	for h := range l.Hashes() {
		data, _ := l.Get(h)
		nodes = append(nodes, fetch.Node{Hash: h, Data: data})
	}
	for _, c := range []struct {
		dir       string
		compacted bool
	}{{"", false}, {memStore, false}, {t.TempDir() + "/kept", true}} {
		s, err := openStore(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(nodes); err != nil {
			t.Fatal(err)
		}
		took, err := s.compact(context.Background())
		if err != nil || (took > 0) != c.compacted {
			t.Errorf("-store %q: compacted in %v (%v); want compacted %v", c.dir, took, err, c.compacted)
		}
		for _, n := range nodes {
			if data, ok := s.Get(n.Hash); !ok || !bytes.Equal(data, n.Data) {
				t.Fatalf("-store %q: node %s lost", c.dir, n.Hash)
			}
		}
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
	}
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/peersched/peersched/peer"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// peerRun is a ledgerpeer run in this process.
type peerRun struct {
	first     string   // its first line on stdout
	addrs     []string // the addresses it names there
	interrupt context.CancelFunc
	lines     *bufio.Scanner
	exit      chan int
	stderr    *lockedWriter
}

// startPeer runs ledgerpeer with args until stop; it fails t unless it
// prints its first line.
func startPeer(t *testing.T, args ...string) *peerRun {
	t.Helper()
	ctx, interrupt := context.WithCancel(context.Background())
	out, w := io.Pipe()
	p := &peerRun{interrupt: interrupt, exit: make(chan int, 1), stderr: &lockedWriter{}, lines: bufio.NewScanner(out)}
	errs := p.stderr
	go func() {
		code := run(ctx, args, w, errs)
		w.Close()
		p.exit <- code
	}()
	if !p.lines.Scan() {
		interrupt()
		t.Fatalf("no first line (exit %d): %s", <-p.exit, errs.String())
	}
	p.first = p.lines.Text()
	p.addrs = strings.Split(p.first[strings.LastIndex(p.first, " ")+1:], ",")
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop interrupts the run and returns what it printed after its first
// line; it fails t unless it exits 0.
func (p *peerRun) stop(t *testing.T) string {
	t.Helper()
	if p.interrupt == nil {
		return ""
	}
	p.interrupt()
	p.interrupt = nil
	var rest strings.Builder
	for p.lines.Scan() {
		rest.WriteString(p.lines.Text() + "\n")
	}
	if code := <-p.exit; code != 0 {
		t.Fatalf("exit %d", code)
	}
	return rest.String()
}

// lockedWriter lets the test read what a run writes while it runs.
type lockedWriter struct {
	mu sync.Mutex
	w  strings.Builder
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// fetchAll fetches the ledger root from addrs, through the scheduler, and
// fails t unless every node arrives.
func fetchAll(t *testing.T, root ledger.Hash, nodes int, addrs ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sched, err := scheduler.New(scheduler.Config{RequestIDs: tcpnet.RequestIDs()})
	if err != nil {
		t.Fatal(err)
	}
	client := tcpnet.NewClient(sched, tcpnet.ClientConfig{Channels: 2})
	for _, a := range addrs {
		client.Add(peer.ID(a), a)
	}
	rep, err := fetch.Run(ctx, sched, fetch.Config{Root: root, Expected: nodes, Batch: 64, Timeout: time.Second})
	client.Close()
	if err := sched.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err != nil || rep.Objects != nodes {
		t.Fatalf("fetch: %v, %d of %d objects", err, rep.Objects, nodes)
	}
}

// TestStoreBuiltOnceThenReused: the first run with -store builds the store
// from -objects and -seed, says so with its time and rate, and serves the
// ledger Generate gives (fetched whole); a second run serves the same
// ledger from the same store without building it, whether or not the
// flags name it, or name only its seed or its count (the store's own
// standing for the other); flags that name another ledger are refused,
// naming both.
func TestStoreBuiltOnceThenReused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	l, err := ledger.Generate(4, 3000)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("serving ledger %s (3000 objects, %d nodes) on ", l.Root().Hex(), l.Len())

	p := startPeer(t, "-store", dir, "-objects", "3000", "-seed", "4", "-listen", "127.0.0.1:0")
	if !strings.Contains(p.first, want) || !regexp.MustCompile(`built the ledger generated from seed 4, 3000 objects: 3000 objects, [0-9]+ nodes, [0-9]+ bytes in \S+ \([0-9]+ nodes/s\), merged in `).MatchString(p.stderr.String()) {
		t.Fatalf("first run: %q, stderr %q", p.first, p.stderr.String())
	}
	fetchAll(t, l.Root(), l.Len(), p.addrs...)
	if rest := p.stop(t); !strings.Contains(rest, fmt.Sprintf("(%d objects)", l.Len())) {
		t.Errorf("last words %q do not count the %d objects served", rest, l.Len())
	}

	for _, args := range [][]string{{"-store", dir, "-listen", "127.0.0.1:0"}, {"-store", dir, "-objects", "3000", "-seed", "4", "-listen", "127.0.0.1:0"},
		{"-store", dir, "-seed", "4", "-listen", "127.0.0.1:0"}, {"-store", dir, "-objects", "3000", "-listen", "127.0.0.1:0"}} {
		p = startPeer(t, args...)
		if !strings.Contains(p.first, want) || strings.Contains(p.stderr.String(), "built") {
			t.Fatalf("%q: %q, stderr %q; want the same ledger, not built again", args, p.first, p.stderr.String())
		}
		fetchAll(t, l.Root(), l.Len(), p.addrs...)
		p.stop(t)
	}

	var stderr strings.Builder
	if code := run(context.Background(), []string{"-store", dir, "-objects", "3001", "-seed", "4"}, io.Discard, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "holds the ledger generated from seed 4, 3000 objects, the flags name the ledger generated from seed 4, 3001 objects") {
		t.Fatalf("another ledger: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"-store", dir, "-seed", "5"}, io.Discard, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "the flags name the ledger generated from seed 5, 3000 objects") {
		t.Fatalf("another seed alone: exit %d, stderr %q", code, stderr.String())
	}
}

// TestStoreBuildCutShortIsRedone: a store whose build did not finish (its
// description says so; a killed build leaves it so) is built again from
// nothing, whatever its half-written nodes held.
func TestStoreBuildCutShortIsRedone(t *testing.T) {
	dir := t.TempDir()
	if err := writeMeta(dir, storeMeta{Seed: 2, Objects: 500}); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, nodesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, nodesDir, "CURRENT"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ledger.Generate(2, 500)
	if err != nil {
		t.Fatal(err)
	}
	p := startPeer(t, "-store", dir, "-objects", "500", "-seed", "2", "-listen", "127.0.0.1:0")
	if !strings.Contains(p.first, l.Root().Hex()) || !strings.Contains(p.stderr.String(), "built") {
		t.Fatalf("%q, stderr %q; want the ledger built again", p.first, p.stderr.String())
	}
	fetchAll(t, l.Root(), l.Len(), p.addrs...)
	p.stop(t)
	if m, err := readMeta(dir); err != nil || !m.Complete || m.Root != l.Root().Hex() || m.Nodes != l.Len() {
		t.Fatalf("description %+v (%v)", m, err)
	}
}

// TestListenRange: -listen HOST:A-B serves one peer per port from one
// ledger, each with its own counters: a fetch from one of them leaves the
// others' at zero, and the last words count each on its own.
func TestListenRange(t *testing.T) {
	first := freePorts(t, 3)
	p := startPeer(t, "-store", t.TempDir(), "-objects", "800", "-seed", "9", "-listen", fmt.Sprintf("127.0.0.1:%d-%d", first, first+2))
	if len(p.addrs) != 3 || p.addrs[2] != fmt.Sprintf("127.0.0.1:%d", first+2) {
		t.Fatalf("first line %q: want three addresses", p.first)
	}
	l, err := ledger.Generate(9, 800)
	if err != nil {
		t.Fatal(err)
	}
	fetchAll(t, l.Root(), l.Len(), p.addrs[1])
	rest := p.stop(t)
	for i, a := range p.addrs {
		served := 0
		if i == 1 {
			served = l.Len()
		}
		if !regexp.MustCompile(fmt.Sprintf(`stopped on %s after \S+: [0-9]+ connections, [0-9]+ requests, [0-9]+ replies \(%d objects\)`, regexp.QuoteMeta(a), served)).MatchString(rest) {
			t.Errorf("%s served %d objects; last words: %s", a, served, rest)
		}
		if !strings.Contains(rest, "as a rippled peer on "+a) {
			t.Errorf("no accounts of %s in %s", a, rest)
		}
	}
}

// freePorts returns the first of n consecutive ports free on 127.0.0.1
// now.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		lns := []net.Listener{ln}
		ok := base+n-1 <= 65535
		for p := base + 1; ok && p < base+n; p++ {
			l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, l2)
		}
		for _, l := range lns {
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports", n)
	return 0
}

// TestBadListenRange: a -listen range that names no ports, or too many, is
// refused with exit 2, naming the flag and the reason.
func TestBadListenRange(t *testing.T) {
	for _, c := range []struct{ listen, want string }{
		{"127.0.0.1:9-8", `-listen "127.0.0.1:9-8": port range "9-8": the first port is above the last`},
		{"127.0.0.1:0-3", `port range "0-3": want FIRST-LAST, ports from 1 to 65535`},
		{"127.0.0.1:7-x", `port range "7-x": want FIRST-LAST`},
		{"127.0.0.1:1000-3000", `port range "1000-3000": 2001 ports, want at most 1024`},
		{"nohost", `-listen "nohost": `},
	} {
		var stderr strings.Builder
		if code := run(context.Background(), []string{"-listen", c.listen, "-objects", "10"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("-listen %q: exit %d, stderr %q; want 2 and %q", c.listen, code, stderr.String(), c.want)
		}
	}
}

// TestCPUProfile: -cpuprofile writes a profile that go tool pprof reads
// (gzipped protobuf) once the run ends; a file that cannot be created
// exits 1 and names the flag.
func TestCPUProfile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cpu.pprof")
	p := startPeer(t, "-cpuprofile", file, "-objects", "100", "-listen", "127.0.0.1:0")
	p.stop(t)
	b, err := os.ReadFile(file)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("profile: %d bytes (%v), want a gzipped profile", len(b), err)
	}
	var stderr strings.Builder
	if code := run(context.Background(), []string{"-cpuprofile", filepath.Join(file, "no", "such"), "-objects", "10"}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "-cpuprofile: ") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// TestStoreCache: with -flat off, -cache auto (the default) sizes the block cache to the
// store's index, and says so; -cache N takes N MiB; a bad -cache is a
// usage error naming it.
func TestStoreCache(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		said string // in stderr
	}{
		{nil, "ledgerpeer: a block cache of 8 MiB for the store's 0.0 MiB of index, and 1000 of its "},
		{[]string{"-cache", "24"}, "ledgerpeer: a block cache of 24 MiB for the store's 0.0 MiB of index, and 1000 of its "},
	} {
		p := startPeer(t, append([]string{"-store", dir, "-flat", "off", "-objects", "300", "-listen", "127.0.0.1:0"}, c.args...)...)
		if !strings.Contains(p.stderr.String(), c.said) {
			t.Errorf("%q: stderr %q, want %q", c.args, p.stderr.String(), c.said)
		}
		p.stop(t)
	}
	for _, bad := range []string{"0", "-3", "big", "2000000"} {
		var stderr strings.Builder
		if code := run(context.Background(), []string{"-store", dir, "-cache", bad}, io.Discard, &stderr); code != 2 ||
			!strings.Contains(stderr.String(), fmt.Sprintf("-cache %q: want auto or a size in MiB, 1 to 1048576", bad)) {
			t.Errorf("-cache %s: exit %d, stderr %q", bad, code, stderr.String())
		}
	}
}

// TestAutoCacheBytes: the cache holds the index and a quarter more, beside
// the default, up to the cap.
func TestAutoCacheBytes(t *testing.T) {
	for _, c := range []struct{ index, want int64 }{
		{0, 8 << 20},
		{2_489_934, 8<<20 + 3_112_417}, // the 1M entries' store
		{40 << 20, 58 << 20},
		{60 << 20, 80 << 20},
		{1 << 30, 80 << 20},
	} {
		if got := autoCacheBytes(c.index); got != c.want {
			t.Errorf("autoCacheBytes(%d) = %d, want %d", c.index, got, c.want)
		}
	}
}

// TestServedOpenFiles: a served store keeps all its files open and a
// margin, never fewer than Pebble's default, within what the process's
// limit leaves for its connections.
func TestServedOpenFiles(t *testing.T) {
	for _, c := range []struct {
		files int
		limit uint64
		want  int
	}{
		{0, 0, 1000},
		{435, 20_000, 1000},       // the 4M store
		{2085, 20_000, 2149},      // the 19M store
		{2085, 0, 2149},           // no limit known
		{2085, 2048, 1024},        // the limit leaves room for 1,024 connections
		{2085, 1024, 1000},        // never below Pebble's default
		{50_000, 1 << 40, 50_064}, // a limit beyond any count
	} {
		if got := servedOpenFiles(c.files, c.limit); got != c.want {
			t.Errorf("servedOpenFiles(%d, %d) = %d, want %d", c.files, c.limit, got, c.want)
		}
	}
}

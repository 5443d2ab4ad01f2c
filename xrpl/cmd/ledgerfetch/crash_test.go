package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/nodestore/pebblestore"
	"github.com/peersched/peersched/xrpl/simnet"
	"github.com/peersched/peersched/xrpl/tcpnet"
)

// childEnv, when set, makes the test binary run the command itself with the
// arguments it holds (one per line) instead of the tests: a child process
// that a test can kill.
const childEnv = "LEDGERFETCH_TEST_CHILD_ARGS"

func childArgs() ([]string, bool) {
	v, ok := os.LookupEnv(childEnv)
	if !ok {
		return nil, false
	}
	return strings.Split(v, "\n"), true
}

func runChild(args []string) int { return run(context.Background(), args, os.Stdout, os.Stderr) }

// startChild starts the command with args in a child process; its stderr
// (progress, with -json) comes back line by line.
func startChild(t *testing.T, args ...string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+strings.Join(args, "\n"))
	stdout := &strings.Builder{}
	cmd.Stdout = stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, bufio.NewScanner(stderr), stdout
}

// progressPct finds the percentage in a progress line.
var progressPct = regexp.MustCompile(`([0-9.]+)%`)

// TestCrashResume: a fetch killed with SIGKILL midway, once it has shown
// progress, leaves a store holding a tree from the root (every node in it
// is reached from the root); run again on the same store, the fetch
// resumes with exactly those nodes, asks the peers for exactly the others,
// completes, and the store then holds the whole ledger.
func TestCrashResume(t *testing.T) {
	const leaves = 10_000
	l, err := ledger.Generate(5, leaves)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for i := range 2 {
		s, err := tcpnet.NewServer(tcpnet.ServerConfig{Ledger: l, Seed: uint64(i),
			Behaviour: tcpnet.Behaviour{Latency: simnet.Uniform(15*time.Millisecond, 25*time.Millisecond)}})
		if err == nil {
			err = s.Listen("127.0.0.1:0")
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		addrs = append(addrs, s.Addr())
	}
	dir := t.TempDir()
	common := []string{"-connect", strings.Join(addrs, ","), "-root", l.Root().Hex(), "-expect", strconv.Itoa(l.Len()),
		"-store", dir, "-json", "-batch", "32"}

	// First run: slow enough (2 peers x 2 channels x 32 objects per 20ms)
	// to be seen midway; killed at its first progress line past 5%.
	cmd, progress, _ := startChild(t, append(common, "-channels", "2")...)
	killedAt := ""
	for progress.Scan() {
		line := progress.Text()
		m := progressPct.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if pct, _ := strconv.ParseFloat(m[1], 64); pct >= 5 {
			if pct >= 100 {
				t.Fatalf("the fetch was done before it could be killed: %s", line)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			killedAt = line
			break
		}
	}
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the first run ended with %v, not killed (last progress %q)", err, killedAt)
	}

	st, err := pebblestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.Count()
	if err == nil {
		err = st.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	if stored == 0 || stored >= l.Len() {
		t.Fatalf("the killed fetch stored %d of %d nodes (killed at %q)", stored, l.Len(), killedAt)
	}

	// Second run, on the same store, faster.
	cmd, progress, stdout := startChild(t, append(common, "-channels", "8")...)
	for progress.Scan() {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the resumed run: %v\n%s", err, stdout)
	}
	type report struct {
		Complete bool    `json:"complete"`
		Objects  int     `json:"objects"`
		Known    int     `json:"known"`
		Resumed  int     `json:"resumed"`
		Wall     float64 `json:"wall_seconds"`
		Merged   float64 `json:"store_compaction_seconds"`
		Peers    []struct {
			Objects int `json:"objects"`
		} `json:"peers"`
	}
	rep := decodeOne[report](t, stdout.String())
	served := 0
	for _, p := range rep.Peers {
		served += p.Objects
	}
	t.Logf("killed at %q; the store held %d nodes; resumed %d, fetched %d of %d in %.1fs", killedAt, stored, rep.Resumed, rep.Objects, l.Len(), rep.Wall)
	if !rep.Complete || rep.Resumed != stored || rep.Objects != l.Len()-stored || rep.Known != rep.Objects || served != rep.Objects {
		t.Fatalf("resumed %d (the store held %d), fetched %d (peers served %d) of %d known, ledger has %d nodes, complete %v",
			rep.Resumed, stored, rep.Objects, served, rep.Known, l.Len(), rep.Complete)
	}
	if rep.Merged <= 0 {
		t.Fatalf("the complete fetch did not compact its store (store_compaction_seconds %v)", rep.Merged)
	}

	st, err = pebblestore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.Count(); n != l.Len() || err != nil {
		t.Fatalf("the store holds %d nodes (%v), the ledger %d", n, err, l.Len())
	}
	if root, err := rebuild(st, l.Root(), nil); root != l.Root() || err != nil {
		t.Fatalf("the store rebuilds to %s (%v), want %s", root, err, l.Root())
	}
}

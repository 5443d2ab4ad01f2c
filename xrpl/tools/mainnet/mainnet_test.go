package mainnet

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/peersched/peersched/internal/race"
	"github.com/peersched/peersched/xrpl/nodestore/pebblestore"
)

// The limits the issue sets, in bytes of peak RSS.
const (
	buildRSS = 500 << 20 // the peers' process while it builds its store
	peerRSS  = 300 << 20 // the peers' process while it serves
	fetchRSS = 300 << 20 // the fetcher
)

// TestStorePeers: see the package's doc.
func TestStorePeers(t *testing.T) {
	switch {
	case race.Enabled:
		t.Skip("it runs two commands as processes, built without -race; .ci/run runs it without: go test -run TestStorePeers ./xrpl/tools/mainnet/")
	case testing.Short():
		t.Skip("-short: it builds both commands and fetches a ledger of 200,000 entries twice")
	}
	objects := envInt(t, "MAINNET_OBJECTS", 200_000)
	peers := envInt(t, "MAINNET_PEERS", 16)
	storeDir := os.Getenv("MAINNET_DIR")
	if storeDir == "" {
		storeDir = filepath.Join(t.TempDir(), "peers")
	}
	bin := buildCommands(t)
	peerArgs := []string{"-store", storeDir, "-objects", strconv.Itoa(objects), "-seed", "1"}
	// The peers' ports are chosen as each process starts: a build takes
	// minutes at mainnet's size, time enough for ports found free before
	// it to be taken.
	listen := func() []string {
		first := freePorts(t, peers)
		return slices.Concat(peerArgs, []string{"-listen", fmt.Sprintf("127.0.0.1:%d-%d", first, first+peers-1)})
	}

	// The store, built unless MAINNET_DIR holds it already, by a process
	// serving one peer.
	start := time.Now()
	p := startPeers(t, bin, slices.Concat(peerArgs, []string{"-listen", "127.0.0.1:0"})...)
	t.Logf("peers' store %s: %s (%.1fs to serve)", storeDir, strings.TrimSpace(p.stderr.String()), time.Since(start).Seconds())
	served, rss := p.stop(t)
	t.Logf("peers' process, building and serving: peak RSS %s", mb(rss))
	if served != 0 || rss > buildRSS {
		t.Errorf("building: %d objects served, peak RSS %s; want 0 and at most %s", served, mb(rss), mb(buildRSS))
	}

	// One fetch from start to end, into a temporary store.
	p = startPeers(t, bin, listen()...)
	if strings.Contains(p.stderr.String(), "built") {
		t.Fatalf("the restarted peers built their store again: %s", p.stderr.String())
	}
	f := runFetch(t, bin, 0, p.fetchArgs()...)
	r := f.report
	t.Logf("fetch: %d objects in %.1fs: %.0f objects/s; fetcher peak RSS %s, CPU %.1fs (%s)", r.Objects, r.Wall, r.Rate, mb(f.rss), f.cpu.Seconds(), perNode(f.cpu, r.Objects))
	if !r.Complete || r.Objects != p.nodes || f.rss > fetchRSS {
		t.Errorf("fetch: complete %v, %d of %d objects, peak RSS %s (at most %s)", r.Complete, r.Objects, p.nodes, mb(f.rss), mb(fetchRSS))
	}
	sent, rss := p.stop(t)
	t.Logf("peers' process, serving: peak RSS %s, %d objects sent, CPU %.1fs (%s sent)", mb(rss), sent, p.cpu.Seconds(), perNode(p.cpu, sent))
	if rss > peerRSS || sent < r.Objects {
		t.Errorf("peers: peak RSS %s (at most %s), %d objects sent for %d fetched", mb(rss), mb(peerRSS), sent, r.Objects)
	}

	// A fetch into a store it keeps, killed about half way, then run again.
	fetchStore := filepath.Join(t.TempDir(), "fetched")
	p = startPeers(t, bin, listen()...)
	killArgs := append(p.fetchArgs(), "-store", fetchStore)
	if objects < 1_000_000 {
		// Small enough to be fetched within a progress line or two at
		// full speed: requests of 64 objects, which the rippled rate
		// limits hold to 16 a second a peer after a burst, let the kill
		// land near half way.
		killArgs = append(killArgs, "-batch", "64")
	}
	killed := runFetch(t, bin, 50, killArgs...)
	sentBefore, _ := p.stop(t)
	st, err := pebblestore.Open(fetchStore)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.Count()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if err != nil || stored == 0 || stored >= p.nodes {
		t.Fatalf("the killed fetch (at %q) stored %d of %d nodes (%v)", killed.killedAt, stored, p.nodes, err)
	}
	t.Logf("killed at %q (peak RSS %s); it had stored %d nodes, the peers sent %d", killed.killedAt, mb(killed.rss), stored, sentBefore)

	p = startPeers(t, bin, listen()...)
	resumed := runFetch(t, bin, 0, append(p.fetchArgs(), "-store", fetchStore)...)
	sent, rss = p.stop(t)
	r = resumed.report
	t.Logf("resumed: %d resumed, %d fetched of %d in %.1fs (%.0f objects/s), merged in %.1fs; peak RSS %s; the peers sent %d (peak RSS %s); %d hedges, %d timeouts, %d objects asked again, dropped %+v",
		r.Resumed, r.Objects, p.nodes, r.Wall, r.Rate, r.Merged, mb(resumed.rss), sent, mb(rss), r.Hedges, r.Timeouts, r.Retries, r.Dropped)
	if !r.Complete || r.Resumed != stored || r.Resumed+r.Objects != p.nodes {
		t.Errorf("resumed %d (the store held %d) + fetched %d = %d, want the ledger's %d nodes; complete %v", r.Resumed, stored, r.Objects, r.Resumed+r.Objects, p.nodes, r.Complete)
	}
	if resumed.rss > fetchRSS || killed.rss > fetchRSS || rss > peerRSS {
		t.Errorf("peak RSS: fetcher %s then %s, peers %s; want at most %s and %s", mb(killed.rss), mb(resumed.rss), mb(rss), mb(fetchRSS), mb(peerRSS))
	}
	// The peers' counters agree: they sent each object the fetch took
	// once, one for each lookup answered beside it (and perhaps for one
	// that timed out), and more only for objects asked again (hedged,
	// timed out, left out of a reply) or answers the fetch dropped (late,
	// duplicate).
	delivered := 0
	for _, pr := range r.Peers {
		delivered += pr.Objects
	}
	dropped := r.Dropped.Duplicate + r.Dropped.Late + r.Dropped.WrongPeer + r.Dropped.Unknown
	lookups, answered := r.lookups()
	exact := r.Hedges == 0 && r.Timeouts == 0 && r.Retries == 0 && dropped == 0
	if delivered != r.Objects || sent < r.Objects+answered || (exact && sent > r.Objects+lookups) {
		t.Errorf("the peers sent %d objects, the fetch took %d (%d by peer) and %d of %d lookups were answered, with %d hedges, %d timeouts, %d objects asked again and %d responses dropped",
			sent, r.Objects, delivered, answered, lookups, r.Hedges, r.Timeouts, r.Retries, dropped)
	}
	st, err = pebblestore.Open(fetchStore)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if n, err := st.Count(); n != p.nodes || err != nil {
		t.Errorf("the fetch's store holds %d nodes (%v), want %d", n, err, p.nodes)
	}
}

// envInt reads a positive count from the environment, or gives def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// commands are the built binaries.
type commands struct{ peer, fetch string }

// buildCommands builds ledgerpeer and ledgerfetch into a temporary
// directory.
func buildCommands(t *testing.T) commands {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/peersched/peersched/xrpl/cmd/ledgerpeer",
		"github.com/peersched/peersched/xrpl/cmd/ledgerfetch").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return commands{peer: filepath.Join(dir, "ledgerpeer"), fetch: filepath.Join(dir, "ledgerfetch")}
}

// peerProc is a running ledgerpeer process and what its first line said.
type peerProc struct {
	cmd    *exec.Cmd
	out    *bufio.Scanner
	stderr *strings.Builder
	root   string
	nodes  int
	addrs  []string
	cpu    time.Duration // once stopped
}

// serving parses ledgerpeer's first line.
var serving = regexp.MustCompile(`^ledgerpeer: serving ledger ([0-9a-f]{64}) \([0-9]+ objects, ([0-9]+) nodes\) on (\S+)$`)

// startPeers starts ledgerpeer with args and waits for its first line
// (after the store is built, if it must be).
func startPeers(t *testing.T, bin commands, args ...string) *peerProc {
	t.Helper()
	p := &peerProc{cmd: exec.Command(bin.peer, args...), stderr: &strings.Builder{}}
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	p.out = bufio.NewScanner(out)
	if !p.out.Scan() {
		err := p.cmd.Wait()
		t.Fatalf("ledgerpeer %q: no first line (%v): %s", args, err, p.stderr)
	}
	m := serving.FindStringSubmatch(p.out.Text())
	if m == nil {
		t.Fatalf("ledgerpeer's first line: %q", p.out.Text())
	}
	p.root, p.addrs = m[1], strings.Split(m[3], ",")
	p.nodes, _ = strconv.Atoi(m[2])
	return p
}

// fetchArgs are ledgerfetch's arguments to fetch from p, with a JSON
// report.
func (p *peerProc) fetchArgs() []string {
	return []string{"-connect", strings.Join(p.addrs, ","), "-root", p.root, "-expect", strconv.Itoa(p.nodes), "-json"}
}

// sentObjects finds each peer's count of objects sent in ledgerpeer's last
// words.
var sentObjects = regexp.MustCompile(`stopped(?: on \S+)? after \S+: [0-9]+ connections, [0-9]+ requests, [0-9]+ replies \(([0-9]+) objects\)`)

// stop interrupts the peers and returns the objects they sent in all and
// the process's peak RSS; p.cpu is then the CPU time it used.
func (p *peerProc) stop(t *testing.T) (sent int, rss int64) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var last strings.Builder
	for p.out.Scan() {
		last.WriteString(p.out.Text() + "\n")
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("ledgerpeer: %v: %s", err, p.stderr)
	}
	counts := sentObjects.FindAllStringSubmatch(last.String(), -1)
	if len(counts) != len(p.addrs) {
		t.Fatalf("ledgerpeer's last words count %d peers of %d: %s", len(counts), len(p.addrs), last.String())
	}
	for _, c := range counts {
		n, _ := strconv.Atoi(c[1])
		sent += n
	}
	p.cpu = cpuTime(p.cmd)
	return sent, peakRSS(p.cmd)
}

// report is what the harness reads of ledgerfetch's JSON report.
type report struct {
	Complete bool    `json:"complete"`
	Objects  int     `json:"objects"`
	Resumed  int     `json:"resumed"`
	Wall     float64 `json:"wall_seconds"`
	Rate     float64 `json:"objects_per_second"`
	Merged   float64 `json:"store_compaction_seconds"`
	Hedges   int     `json:"hedges"`
	Timeouts int     `json:"timeouts"`
	Retries  int     `json:"retries"` // objects asked again
	Dropped  struct {
		Duplicate int `json:"duplicate"`
		Late      int `json:"late"`
		WrongPeer int `json:"wrong_peer"`
		Unknown   int `json:"unknown"`
	} `json:"dropped"`
	Peers []struct {
		Objects int `json:"objects"`
	} `json:"peers"`
	// The components beside the fetch: with -root, each lookup asks a
	// peer for the root, one object more that the peer sends.
	Components []struct {
		Name     string `json:"name"`
		Requests int    `json:"requests"`
		Done     int    `json:"done"`
	} `json:"components"`
}

// lookups returns the lookups the fetcher sent beside the fetch, and those
// answered.
func (r report) lookups() (sent, answered int) {
	for _, c := range r.Components {
		if c.Name == "lookups" {
			return c.Requests, c.Done
		}
	}
	return 0, 0
}

// fetchRun is how a ledgerfetch process ended.
type fetchRun struct {
	report   report
	killedAt string // the progress line it was killed at, if it was
	rss      int64
	cpu      time.Duration
}

// progressPct finds the percentage in a progress line.
var progressPct = regexp.MustCompile(`([0-9.]+)%`)

// runFetch runs ledgerfetch with args; with killAt above 0, it kills it
// with SIGKILL at its first progress line at or past killAt percent (and
// fails t if it was done before).
func runFetch(t *testing.T, bin commands, killAt float64, args ...string) fetchRun {
	t.Helper()
	cmd := exec.Command(bin.fetch, args...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
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
	var run fetchRun
	var said strings.Builder
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		said.WriteString(lines.Text() + "\n")
		m := progressPct.FindStringSubmatch(lines.Text())
		if killAt <= 0 || m == nil {
			continue
		}
		if pct, _ := strconv.ParseFloat(m[1], 64); pct >= killAt {
			if pct >= 100 {
				t.Fatalf("the fetch was done before it could be killed: %s", lines.Text())
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			run.killedAt = lines.Text()
			break
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
	err = cmd.Wait()
	run.rss = peakRSS(cmd)
	run.cpu = cpuTime(cmd)
	if killAt > 0 {
		if run.killedAt == "" {
			t.Fatalf("the fetch ended (%v) before it reached %v%%: %s", err, killAt, said.String())
		}
		return run
	}
	if err != nil {
		t.Fatalf("ledgerfetch: %v\n%s\n%s", err, said.String(), stdout.String())
	}
	var r struct{ Runs []report }
	if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil || len(r.Runs) != 1 {
		t.Fatalf("ledgerfetch's report (%v): %s", err, stdout.String())
	}
	run.report = r.Runs[0]
	return run
}

// peakRSS returns an ended process's peak resident set size in bytes.
func peakRSS(cmd *exec.Cmd) int64 {
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss << 10 // kilobytes on Linux
	}
	return 0
}

// cpuTime returns the CPU time, user and system, an ended process used.
func cpuTime(cmd *exec.Cmd) time.Duration {
	return cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// perNode formats a CPU time spread over n nodes, in microseconds a node.
func perNode(cpu time.Duration, n int) string {
	return fmt.Sprintf("%.1f µs a node", cpu.Seconds()*1e6/float64(max(n, 1)))
}

// mb formats bytes as megabytes.
func mb(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }

// freePorts returns the first of n consecutive ports free on 127.0.0.1
// now.
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for range 100 {
		// Below Linux's ephemeral ports (32768 and up), which outgoing
		// connections take from.
		base := 20_000 + rand.IntN(12_000-n)
		var held []net.Listener
		ok := true
		for p := base; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			ok = err == nil
			if ok {
				held = append(held, l)
			}
		}
		for _, l := range held {
			_ = l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatalf("no %d consecutive free ports on 127.0.0.1", n)
	return 0
}

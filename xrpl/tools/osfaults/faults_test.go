//go:build osfaults

package osfaults

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

const (
	peerCount = 3
	// objects is the generated ledger's leaves: about 81,000 nodes, which
	// the shaped links carry in some ten seconds, so each fault lands in the
	// middle of a fetch.
	objects = "60000"
	port    = "7001"
	// faultAt is how far (percent of objects) the fetch must be before a
	// fault is injected.
	faultAt = 20.0
	// faultFor is how long a peer stays hung, or its link cut: well past
	// requestTimeout, so that its requests in flight time out.
	faultFor       = 3 * time.Second
	requestTimeout = "1s"
	// eventLimit bounds each wait for something the harness expects to
	// observe (a peer serving, the fetch's progress, a reconnection); fetchLimit
	// bounds a whole fetch.
	eventLimit = 30 * time.Second
	fetchLimit = 2 * time.Minute
	// victim is the peer each fault hits (an index into lab.peers).
	victim = 1
)

// harness is the built commands and the network they run in, shared by the
// subtests; each subtest starts fresh peers and a fresh fetch, so that its
// report's counters are its fault's alone.
type harness struct {
	lab      *lab
	peerBin  string
	fetchBin string
}

func TestOSFaults(t *testing.T) {
	requireRootAndTools(t)
	removeStaleNamespaces(t)
	h := &harness{}
	h.build(t)
	h.lab = newLab(t, peerCount)

	t.Run("Baseline", h.testBaseline)
	t.Run("HungPeer", h.testHungPeer)
	t.Run("CrashedPeer", h.testCrashedPeer)
	t.Run("CutLink", h.testCutLink)
}

// testBaseline fetches with no fault but the links' shaping: the other
// tests' counters are read against it.
func (h *harness) testBaseline(t *testing.T) {
	peers, root := h.startPeers(t)
	f := h.startFetch(t)
	r := f.finish(t, root)
	logCounters(t, "no fault", r, "")
	if r.Disconnects != 0 {
		t.Errorf("%d requests failed by disconnection with no fault injected", r.Disconnects)
	}
	for peer, e := range r.PeerEvents {
		if e.Disconnections != 0 {
			t.Errorf("the report's peer events show %s disconnected %d times with no fault injected", peer, e.Disconnections)
		}
	}
	h.stopPeers(t, peers)
}

// testHungPeer stops a peer with SIGSTOP for faultFor, mid-fetch: its
// requests time out, its connection stays up (the kernel keeps it while
// the process is stopped), and after SIGCONT it serves again.
func (h *harness) testHungPeer(t *testing.T) {
	peers, root := h.startPeers(t)
	f := h.startFetch(t)
	f.waitProgress(t, faultAt)

	if err := peers[victim].signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	mark := f.log.len()
	holdFault(faultFor)
	if err := peers[victim].signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	f.requireAllConnected(t, mark, "while the peer was stopped")

	r := f.finish(t, root)
	id := h.peerID(victim)
	logCounters(t, "SIGSTOP "+faultFor.String(), r, id)
	requireTimeoutsOnly(t, r, id)
	h.stopPeers(t, peers)
}

// testCrashedPeer kills a peer with SIGKILL mid-fetch: the kernel closes its
// connection, its requests fail as disconnected, and the peer started again
// on the same address is dialled again and serves the rest of the fetch.
//
// The peer is frozen (SIGSTOP) just before it is killed, until its kernel
// holds a request it has not read. A peer killed at a random moment may have
// answered everything it was asked, its answers still in its socket's send
// buffer, which the kernel delivers before closing: then no request fails
// and only the lost connection shows. Freezing it first makes the crash
// one that loses requests, every time. (The wait may last one request
// timeout: when the peer has read every request sent to it, the fetch sends
// it another only once one of those times out.)
func (h *harness) testCrashedPeer(t *testing.T) {
	peers, root := h.startPeers(t)
	f := h.startFetch(t)
	f.waitProgress(t, faultAt)

	mark := f.log.len()
	if err := peers[victim].signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := h.lab.waitUnread(victim, port, eventLimit); err != nil {
		t.Fatal(err)
	}
	if err := peers[victim].signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !peers[victim].waitExit(eventLimit) {
		t.Fatal("the killed peer did not exit")
	}
	mark = f.waitPeers(t, mark, func(n int) bool { return n < peerCount }, "the killed peer gone")
	restarted, _ := h.startPeer(t, victim)
	peers[victim] = restarted
	f.waitPeers(t, mark, func(n int) bool { return n == peerCount }, "the restarted peer connected again")

	r := f.finish(t, root)
	id := h.peerID(victim)
	logCounters(t, "SIGKILL, restarted", r, id)
	if r.Disconnects < 1 {
		t.Errorf("no request failed by disconnection, though peer %s was killed mid-fetch", id)
	}
	if r.peer(id).Failures < 1 {
		t.Errorf("peer %s had no failed request, though it was killed mid-fetch", id)
	}
	if r.Retries < 1 {
		t.Error("no object was asked again after the crash")
	}
	if r.PeerEvents[id].Disconnections < 1 {
		t.Errorf("the report's peer events show no disconnection of the killed peer %s: %+v", id, r.PeerEvents)
	}
	served := h.stopPeers(t, peers)
	t.Logf("the restarted peer served %d requests", served[victim])
	if served[victim] < 1 {
		t.Errorf("the restarted peer %s served no request: the fetch did not use it after reconnecting", id)
	}
}

// testCutLink makes a peer's link drop every packet for faultFor, mid-fetch:
// TCP keeps the connection through the cut, so its requests time out, with
// no disconnection, and it carries them again once restored.
func (h *harness) testCutLink(t *testing.T) {
	peers, root := h.startPeers(t)
	f := h.startFetch(t)
	f.waitProgress(t, faultAt)

	if err := h.lab.cut(victim); err != nil {
		t.Fatal(err)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			_ = h.lab.restore(victim)
		}
	})
	mark := f.log.len()
	holdFault(faultFor)
	if err := h.lab.restore(victim); err != nil {
		t.Fatal(err)
	}
	restored = true
	f.requireAllConnected(t, mark, "while the link was cut")

	r := f.finish(t, root)
	id := h.peerID(victim)
	logCounters(t, "link cut "+faultFor.String(), r, id)
	requireTimeoutsOnly(t, r, id)
	h.stopPeers(t, peers)
}

// holdFault keeps a fault in place for d. This wait is the fault itself (a
// peer hung, a link cut, for so long), not a wait for something to happen:
// everything the harness waits for, it observes.
func holdFault(d time.Duration) {
	<-time.NewTimer(d).C
}

// requireTimeoutsOnly checks a hung peer's or a cut link's report: the
// peer's requests timed out, none failed by disconnection, and what they
// asked for was asked again.
func requireTimeoutsOnly(t *testing.T, r fetchReport, id string) {
	t.Helper()
	if r.Timeouts < 1 {
		t.Errorf("no request timed out, though peer %s did not answer for %v mid-fetch", id, faultFor)
	}
	if r.peer(id).Failures < 1 {
		t.Errorf("peer %s had no failed request, though it did not answer for %v mid-fetch", id, faultFor)
	}
	if r.Disconnects != 0 {
		t.Errorf("%d requests failed by disconnection, though no connection was lost", r.Disconnects)
	}
	for peer, e := range r.PeerEvents {
		if e.Disconnections != 0 {
			t.Errorf("the report's peer events show %s disconnected %d times, though no connection was lost", peer, e.Disconnections)
		}
	}
	if r.Retries < 1 {
		t.Error("no object was asked again after the timeouts")
	}
}

// logCounters logs a fetch's counters, and the peer id's row if id is set.
func logCounters(t *testing.T, fault string, r fetchReport, id string) {
	t.Helper()
	var rows []string
	for _, p := range r.Peers {
		mark := ""
		if p.ID == id {
			mark = " (faulted)"
		}
		row := fmt.Sprintf("%s%s %d requests, %d failed, %d objects", p.ID, mark, p.Requests, p.Failures, p.Objects)
		if e, ok := r.PeerEvents[p.ID]; ok {
			row += fmt.Sprintf(", %d disconnections", e.Disconnections)
		}
		rows = append(rows, row)
	}
	t.Logf("%s: %d objects, %d requests, timeouts %d, disconnects %d, retries %d (hedges %d, send errors %d); %s",
		fault, r.Objects, r.Requests, r.Timeouts, r.Disconnects, r.Retries, r.Hedges, r.SendErrors, strings.Join(rows, "; "))
}

// build builds ledgerpeer and ledgerfetch into a temporary directory.
func (h *harness) build(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("go", "build", "-o", dir+string(filepath.Separator),
		"github.com/peersched/peersched/xrpl/cmd/ledgerpeer",
		"github.com/peersched/peersched/xrpl/cmd/ledgerfetch").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	h.peerBin, h.fetchBin = filepath.Join(dir, "ledgerpeer"), filepath.Join(dir, "ledgerfetch")
}

// peerID is the address of peer i, which is how ledgerfetch -connect names it.
func (h *harness) peerID(i int) string { return h.lab.peers[i].addr + ":" + port }

var servingRE = regexp.MustCompile(`serving ledger ([0-9a-fA-F]+)`)

// startPeer starts ledgerpeer i in its namespace and waits until it says it
// is serving; it returns the process and the root of the ledger it serves.
func (h *harness) startPeer(t *testing.T, i int) (*proc, string) {
	t.Helper()
	args := append([]string{"-listen", h.peerID(i), "-objects", objects, "-seed", "1"}, h.lab.peerLatencyArgs()...)
	p := startProc(t, fmt.Sprintf("ledgerpeer %s", h.peerID(i)), h.lab.peers[i].ns, nil, h.peerBin, args...)
	_, line, err := p.log.waitFor(0, eventLimit, "serving line", servingRE.MatchString)
	if err != nil {
		t.Fatalf("%s: %v\n%s", p.name, err, p.log)
	}
	return p, strings.ToLower(servingRE.FindStringSubmatch(line)[1])
}

// startPeers starts every peer and returns them and the root they serve.
func (h *harness) startPeers(t *testing.T) ([]*proc, string) {
	t.Helper()
	var peers []*proc
	var root string
	for i := range h.lab.peers {
		p, r := h.startPeer(t, i)
		if root != "" && r != root {
			t.Fatalf("peers serve different ledgers: %s and %s", root, r)
		}
		peers, root = append(peers, p), r
	}
	return peers, root
}

var requestsRE = regexp.MustCompile(`(\d+) requests`)

// stopPeers stops every peer with SIGTERM and returns how many requests
// each says it served, from its last line.
func (h *harness) stopPeers(t *testing.T, peers []*proc) []int {
	t.Helper()
	served := make([]int, len(peers))
	for i, p := range peers {
		if err := p.signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		_, line, err := p.log.waitFor(0, eventLimit, "stopped line", func(s string) bool { return strings.Contains(s, "stopped after") })
		if err != nil {
			t.Fatalf("%s: %v\n%s", p.name, err, p.log)
		}
		if m := requestsRE.FindStringSubmatch(line); m != nil {
			served[i], _ = strconv.Atoi(m[1])
		}
		if !p.waitExit(eventLimit) {
			t.Fatalf("%s did not exit after SIGTERM", p.name)
		}
	}
	return served
}

// fetchProc is a running ledgerfetch: its JSON report arrives on stdout,
// its progress lines on stderr (the watched stream).
type fetchProc struct {
	*proc
	stdout *bytes.Buffer
}

// startFetch starts ledgerfetch in the fetch's namespace against every peer.
func (h *harness) startFetch(t *testing.T) *fetchProc {
	t.Helper()
	var addrs []string
	for i := range h.lab.peers {
		addrs = append(addrs, h.peerID(i))
	}
	stdout := &bytes.Buffer{}
	// The harness checks what OS faults do to requests in flight: each
	// peer must always have some, so that a crash fails them. Paced at
	// rippled's rate (ledgerfetch's default), a peer is often between
	// requests; so the rate limits are off here, and the batches fixed at
	// ledgerfetch's former default. No lookups run beside the fetch: a
	// frozen peer's first unread request must be one of the fetch's, whose
	// failures the checks count, not a lookup's.
	p := startProc(t, "ledgerfetch", h.lab.fetchNS, stdout, h.fetchBin,
		"-connect", strings.Join(addrs, ","), "-objects", objects, "-seed", "1",
		"-timeout", requestTimeout, "-wait", "10s", "-rate-limits", "off", "-batch", "64", "-lookups", "0", "-json")
	return &fetchProc{proc: p, stdout: stdout}
}

// waitProgress waits until the fetch reports at least percent of its
// objects verified.
func (f *fetchProc) waitProgress(t *testing.T, percent float64) {
	t.Helper()
	_, _, err := f.log.waitFor(0, eventLimit, fmt.Sprintf("progress past %.0f%%", percent), func(s string) bool {
		p, ok := parseProgress(s)
		return ok && p.percent >= percent
	})
	if err != nil {
		t.Fatalf("ledgerfetch: %v\n%s", err, f.log)
	}
}

// waitPeers waits for a progress line from index from on whose count of
// connected peers satisfies want, and returns the index after it.
func (f *fetchProc) waitPeers(t *testing.T, from int, want func(int) bool, what string) int {
	t.Helper()
	i, _, err := f.log.waitFor(from, eventLimit, "a progress line with "+what, func(s string) bool {
		p, ok := parseProgress(s)
		return ok && want(p.peers)
	})
	if err != nil {
		t.Fatalf("ledgerfetch: %v\n%s", err, f.log)
	}
	return i + 1
}

// requireAllConnected checks that the progress lines from index from on
// (there must be some) all show every peer connected.
func (f *fetchProc) requireAllConnected(t *testing.T, from int, when string) {
	t.Helper()
	seen := 0
	for _, line := range f.log.since(from) {
		if p, ok := parseProgress(line); ok {
			seen++
			if p.peers != peerCount {
				t.Errorf("%s, the fetch lost a peer: %q", when, line)
			}
		}
	}
	if seen == 0 {
		t.Errorf("no progress line %s: the fault did not land mid-fetch\n%s", when, f.log)
	}
}

// finish waits for the fetch to end and checks that it succeeded: exit 0,
// complete, every object of the ledger whose root the peers serve verified.
func (f *fetchProc) finish(t *testing.T, root string) fetchReport {
	t.Helper()
	if !f.waitExit(fetchLimit) {
		t.Fatalf("ledgerfetch still running after %v\n%s", fetchLimit, f.log)
	}
	if f.err != nil {
		t.Errorf("ledgerfetch: %v\n%s", f.err, f.log)
	}
	r, err := parseReport(f.stdout.Bytes())
	if err != nil {
		t.Fatalf("ledgerfetch's report: %v\n%s", err, f.stdout)
	}
	switch {
	case !r.Complete || r.Error != "":
		t.Errorf("fetch incomplete: %d of %d objects (%s)", r.Objects, r.Expected, r.Error)
	case r.Expected == 0 || r.Objects != r.Expected || r.Objects != r.Known:
		t.Errorf("objects lost: %d verified of %d discovered, %d expected", r.Objects, r.Known, r.Expected)
	case !strings.EqualFold(r.Root, root):
		t.Errorf("fetched root %s, the peers serve %s", r.Root, root)
	}
	return r
}

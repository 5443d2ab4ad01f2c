//go:build osfaults

package osfaults

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// namePrefix starts the name of every namespace the harness makes; the
// creating process's ID follows, so that a later run can tell a crashed
// run's namespaces (their process is gone) from a running one's.
const namePrefix = "osfaults-"

// The shape of every link, in both directions: a peer's replies are also
// held to peerRate, so that a fetch lasts long enough for the faults to land
// in its middle.
const (
	linkDelay  = "10ms"
	linkJitter = "3ms"
	linkLoss   = "0.5%"
	peerRate   = "8mbit"
)

// lab is one run's network: a namespace for the fetch and one per peer, each
// peer joined to the fetch's by a veth pair with a /30 of 10.213.0.0/16. No
// address or link is made outside these namespaces.
type lab struct {
	fetchNS string
	peers   []labPeer
	// netem is false where the kernel has no netem qdisc: then the links are
	// only rate-limited by tbf, latency and jitter come from the peers
	// themselves (ledgerpeer -latency -jitter), there is no random loss, and
	// a cut sets the peer's link down instead.
	netem bool
}

// labPeer is one peer's namespace and link.
type labPeer struct {
	ns        string
	link      string // the peer's end of the veth, in ns
	fetchLink string // the fetch's end, in lab.fetchNS
	addr      string // where the peer listens
}

// requireRootAndTools skips t unless it runs as root with ip and tc,
// installing iproute2 with apt-get first if they are missing.
func requireRootAndTools(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("osfaults: skipped, not root: network namespaces, veth pairs and tc need root (CI runs as root)")
	}
	missing := func() []string {
		var m []string
		for _, tool := range []string{"ip", "tc"} {
			if _, err := exec.LookPath(tool); err != nil {
				m = append(m, tool)
			}
		}
		return m
	}
	m := missing()
	if len(m) == 0 {
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skipf("osfaults: skipped, %s missing and no apt-get to install iproute2 with", strings.Join(m, " and "))
	}
	t.Logf("osfaults: %s missing: apt-get install -y iproute2", strings.Join(m, " and "))
	install := exec.Command("apt-get", "install", "-y", "--no-install-recommends", "iproute2")
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := install.CombinedOutput(); err != nil {
		t.Logf("apt-get install iproute2: %v\n%s", err, out)
	}
	if m = missing(); len(m) > 0 {
		t.Skipf("osfaults: skipped, %s still missing after apt-get install iproute2", strings.Join(m, " and "))
	}
}

// command runs a command and returns its error with its output.
func command(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// inNS runs a command inside namespace ns.
func inNS(ns, name string, args ...string) error {
	return command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// removeStaleNamespaces deletes the namespaces an earlier run left behind
// when it was killed before its cleanup: those named with namePrefix whose
// process is gone. A running harness's namespaces are left alone.
func removeStaleNamespaces(t *testing.T) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line) // "name" or "name (id: 3)"
		if len(fields) == 0 || !strings.HasPrefix(fields[0], namePrefix) {
			continue
		}
		name := fields[0]
		pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, namePrefix), "-", 2)[0])
		if err != nil || pid == os.Getpid() || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		t.Logf("removing namespace %s, left by a run that ended without cleaning up", name)
		if err := command("ip", "netns", "delete", name); err != nil {
			t.Errorf("removing a stale namespace: %v", err)
		}
	}
}

// newLab makes the namespaces and links for peers peers and shapes the
// links. Its cleanup deletes the namespaces, and with them the veth pairs
// inside; register it before starting processes in them, so that the
// processes' cleanups (which run first) have killed them by then.
func newLab(t *testing.T, peers int) *lab {
	t.Helper()
	base := fmt.Sprintf("%s%d-", namePrefix, os.Getpid())
	l := &lab{fetchNS: base + "fetch"}
	var made []string
	t.Cleanup(func() {
		for _, ns := range made {
			if err := command("ip", "netns", "delete", ns); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	mk := func(ns string) {
		if err := command("ip", "netns", "add", ns); err != nil {
			t.Fatal(err)
		}
		made = append(made, ns)
		if err := command("ip", "-n", ns, "link", "set", "lo", "up"); err != nil {
			t.Fatal(err)
		}
	}
	mk(l.fetchNS)
	for i := 1; i <= peers; i++ {
		p := labPeer{ns: fmt.Sprintf("%speer%d", base, i), link: "link0", fetchLink: fmt.Sprintf("peer%d", i)}
		mk(p.ns)
		p.addr = fmt.Sprintf("10.213.%d.2", i)
		steps := [][]string{
			{"-n", l.fetchNS, "link", "add", p.fetchLink, "type", "veth", "peer", "name", p.link, "netns", p.ns},
			{"-n", l.fetchNS, "addr", "add", fmt.Sprintf("10.213.%d.1/30", i), "dev", p.fetchLink},
			{"-n", p.ns, "addr", "add", p.addr + "/30", "dev", p.link},
			{"-n", l.fetchNS, "link", "set", p.fetchLink, "up"},
			{"-n", p.ns, "link", "set", p.link, "up"},
		}
		for _, s := range steps {
			if err := command("ip", s...); err != nil {
				t.Fatal(err)
			}
		}
		l.peers = append(l.peers, p)
	}
	l.shape(t)
	return l
}

// netemShape is what netem does to a link; loss is the netem loss.
func netemShape(loss string, peerSide bool) []string {
	// limit: netem's default queue (1000 packets) would hold over a second
	// of replies at peerRate, a delay no real link adds.
	s := []string{"netem", "limit", "100", "delay", linkDelay, linkJitter, "loss", loss}
	if peerSide {
		s = append(s, "rate", peerRate)
	}
	return s
}

// shape puts netem on both ends of every link, or where the kernel has no
// netem, a tbf rate limit on the peers' ends.
func (l *lab) shape(t *testing.T) {
	t.Helper()
	l.netem = true
	for _, p := range l.peers {
		err := inNS(p.ns, "tc", append([]string{"qdisc", "add", "dev", p.link, "root"}, netemShape(linkLoss, true)...)...)
		if err == nil {
			err = inNS(l.fetchNS, "tc", append([]string{"qdisc", "add", "dev", p.fetchLink, "root"}, netemShape(linkLoss, false)...)...)
		}
		if err != nil {
			l.netem = false
			t.Logf("osfaults: no netem here (%v)", err)
			break
		}
	}
	if l.netem {
		t.Logf("links: netem delay %s ± %s, loss %s each way; peers' replies at %s", linkDelay, linkJitter, linkLoss, peerRate)
		return
	}
	t.Logf("links: this kernel has no netem qdisc, so: tbf at %s on the peers' replies (the OS), "+
		"%s ± %s latency added by the peers themselves (ledgerpeer -latency -jitter), no random loss "+
		"(tbf drops what overflows its queue), and a cut link is set down instead of netem loss 100%%",
		peerRate, linkDelay, linkJitter)
	for _, p := range l.peers {
		_ = inNS(p.ns, "tc", "qdisc", "del", "dev", p.link, "root")           // a netem that took on one end
		_ = inNS(l.fetchNS, "tc", "qdisc", "del", "dev", p.fetchLink, "root") // only, before the other failed
		if err := inNS(p.ns, "tc", "qdisc", "add", "dev", p.link, "root", "tbf", "rate", peerRate, "burst", "16kb", "latency", "50ms"); err != nil {
			t.Fatal(err)
		}
	}
}

// peerLatencyArgs are the ledgerpeer flags that stand in for netem's delay
// where the kernel has none.
func (l *lab) peerLatencyArgs() []string {
	if l.netem {
		return nil
	}
	return []string{"-latency", linkDelay, "-jitter", linkJitter}
}

// cut makes peer i's link drop every packet, both ways.
func (l *lab) cut(i int) error { return l.setCut(i, true) }

// restore undoes cut.
func (l *lab) restore(i int) error { return l.setCut(i, false) }

func (l *lab) setCut(i int, cut bool) error {
	p := l.peers[i]
	if !l.netem {
		state := "up"
		if cut {
			state = "down"
		}
		return command("ip", "-n", p.ns, "link", "set", p.link, state)
	}
	loss := linkLoss
	if cut {
		loss = "100%"
	}
	if err := inNS(p.ns, "tc", append([]string{"qdisc", "change", "dev", p.link, "root"}, netemShape(loss, true)...)...); err != nil {
		return err
	}
	return inNS(l.fetchNS, "tc", append([]string{"qdisc", "change", "dev", p.fetchLink, "root"}, netemShape(loss, false)...)...)
}

// waitUnread waits up to limit until the kernel of peer i holds bytes that
// arrived on its connection on port and that its process has not read (the
// Recv-Q of ss): requests sent to it and not answered. It polls ss every
// pollEvery, as the kernel has no event to wait on for this.
func (l *lab) waitUnread(i int, port string, limit time.Duration) error {
	const pollEvery = 20 * time.Millisecond
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		out, err := exec.Command("ip", "netns", "exec", l.peers[i].ns,
			"ss", "-tnH", "state", "established", "( sport = :"+port+" )").Output()
		if err != nil {
			return fmt.Errorf("ss: %v", err)
		}
		for _, line := range strings.Split(string(out), "\n") {
			// With a state filter ss leaves the state out: Recv-Q comes first.
			if f := strings.Fields(line); len(f) > 0 {
				if n, err := strconv.Atoi(f[0]); err == nil && n > 0 {
					return nil
				}
			}
		}
		select {
		case <-poll.C:
		case <-deadline.C:
			return fmt.Errorf("no unread request at peer %d within %v:\n%s", i+1, limit, out)
		}
	}
}

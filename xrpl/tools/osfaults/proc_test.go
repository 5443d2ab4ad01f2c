//go:build osfaults

package osfaults

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// proc is a command running in a network namespace, in a process group of
// its own, whose output lines (one stream, or stdout and stderr together)
// the test watches.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *lineLog
	// exited is closed once the watched stream has ended and the process
	// has been waited for; err is then its exit status.
	exited chan struct{}
	err    error
}

// startProc starts bin with args in namespace ns. Its stdout goes to stdout
// if that is not nil, and the stream watched is then stderr alone; otherwise
// both go to the watched stream. The process is killed, with its group, when
// t ends.
func startProc(t *testing.T, name, ns string, stdout io.Writer, bin string, args ...string) *proc {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	cmd.Stdout, cmd.Stderr = w, w
	if stdout != nil {
		cmd.Stdout = stdout
	}
	// A group of its own, so that signals reach whatever ip netns exec
	// started; and killed with us should this test binary die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	_ = w.Close() // the child holds its own copy: EOF comes when it exits
	p := &proc{name: name, cmd: cmd, log: newLineLog(), exited: make(chan struct{})}
	go func() {
		defer close(p.exited)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.log.add(sc.Text())
		}
		_ = r.Close()
		p.log.close()
		p.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		if err := p.signal(syscall.SIGKILL); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if !p.waitExit(10 * time.Second) {
			t.Errorf("cleanup: %s did not exit after SIGKILL", name)
		}
	})
	return p
}

// signal sends sig to the process's group. A group already gone is no error.
func (p *proc) signal(sig syscall.Signal) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s with %v: %w", p.name, sig, err)
	}
	return nil
}

// waitExit waits up to limit for the process to exit and reports whether it
// did.
func (p *proc) waitExit(limit time.Duration) bool {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// lineLog keeps the lines a process wrote and lets a test wait, with a
// deadline, for one that it expects.
type lineLog struct {
	mu sync.Mutex
	// The following fields are guarded by mu.
	lines   []string
	ended   bool
	changed chan struct{} // closed and replaced at each new line or the end
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *lineLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	close(l.changed)
	l.changed = make(chan struct{})
}

// len returns how many lines have been written so far.
func (l *lineLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lines)
}

// since returns the lines from index from on.
func (l *lineLog) since(from int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines[min(from, len(l.lines)):]...)
}

// String returns every line so far, for failure messages.
func (l *lineLog) String() string { return strings.Join(l.since(0), "\n") }

// waitFor waits up to limit for a line at index from or later for which
// match is true, and returns its index and the line. It fails when the
// deadline passes or the stream ends first.
func (l *lineLog) waitFor(from int, limit time.Duration, what string, match func(string) bool) (int, string, error) {
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	next := from
	for {
		l.mu.Lock()
		lines, ended, changed := l.lines, l.ended, l.changed
		l.mu.Unlock()
		for ; next < len(lines); next++ {
			if match(lines[next]) {
				return next, lines[next], nil
			}
		}
		if ended {
			return 0, "", fmt.Errorf("the output ended before %s", what)
		}
		select {
		case <-changed:
		case <-deadline.C:
			return 0, "", fmt.Errorf("no %s within %v", what, limit)
		}
	}
}

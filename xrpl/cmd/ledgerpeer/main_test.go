package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/tcpnet"
	"github.com/peersched/peersched/xrpl/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServesUntilInterrupted: ledgerpeer serves the ledger that its flags
// name, a fetch through the scheduler gets all of it, and cancelling the
// context (what an interrupt does) shuts it down cleanly with exit 0.
func TestServesUntilInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serveCtx, interrupt := context.WithCancel(ctx)
	out, w := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		code := run(serveCtx, []string{"-listen", "127.0.0.1:0", "-objects", "2000", "-seed", "4", "-latency", "2ms", "-jitter", "1ms", "-misbehave", "0.1"}, w, io.Discard)
		w.Close()
		exit <- code
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("no first line: %v", lines.Err())
	}
	first := lines.Text()
	addr := first[strings.LastIndex(first, " ")+1:]
	l, err := ledger.Generate(4, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(first, l.Root().Hex()) {
		t.Fatalf("first line %q does not name the root %s", first, l.Root().Hex())
	}

	sched, err := scheduler.New(scheduler.Config{RequestIDs: tcpnet.RequestIDs()})
	if err != nil {
		t.Fatal(err)
	}
	client := tcpnet.NewClient(sched, tcpnet.ClientConfig{Channels: 2})
	client.Add("peer", addr)
	rep, err := fetch.Run(ctx, sched, fetch.Config{Root: l.Root(), Expected: l.Len(), Batch: 32, Timeout: time.Second})
	client.Close()
	if err := sched.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err != nil || rep.Objects != l.Len() {
		t.Fatalf("fetch: %v, %d of %d objects", err, rep.Objects, l.Len())
	}

	interrupt()
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text())
	}
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(rest.String(), "stopped after") {
		t.Errorf("last words %q", rest.String())
	}
}

// TestBadFlags: a bad flag value exits 2 with a message that names the flag
// and the reason; an address that cannot be served exits 1.
func TestBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-objects", "0"}, "-objects 0: want at least 1"},
		{[]string{"-latency", "-1s"}, "-latency -1s: want 0 or more"},
		{[]string{"-jitter", "-1ms"}, "-jitter -1ms: want 0 or more"},
		{[]string{"-latency", "1ms", "-jitter", "2ms"}, "-jitter 2ms: want at most -latency (1ms)"},
		{[]string{"-loss", "2"}, "-loss 2: want a probability, from 0 to 1"},
		{[]string{"-loss", "-0.1"}, "-loss -0.1: want a probability"},
		{[]string{"-misbehave", "-0.5"}, "-misbehave -0.5: want a probability, from 0 to 1"},
		{[]string{"-misbehave", "1.5"}, "-misbehave 1.5: want a probability"},
		{[]string{"-misbehave", "NaN"}, "-misbehave NaN: want a probability"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-ledger", "no-such-ledger.json"}, `-ledger "no-such-ledger.json": `},
		{[]string{"-seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"-max-conns", "0"}, "-max-conns 0: want more than 0"},
		{[]string{"-max-conns-per-addr", "-1"}, "-max-conns-per-addr -1: want more than 0"},
		{[]string{"-idle-timeout", "0s"}, "-idle-timeout 0s: want more than 0"},
		{[]string{"-frame-timeout", "-1s"}, "-frame-timeout -1s: want more than 0"},
		{[]string{"-write-timeout", "0s"}, "-write-timeout 0s: want more than 0"},
		{[]string{"-max-waiting", "0"}, "-max-waiting 0: want more than 0"},
		{[]string{"-max-waiting-total", "0"}, "-max-waiting-total 0: want more than 0"},
		{[]string{"-peer-limits", "no"}, `-peer-limits "no": want on or off`},
		{[]string{"-flat", "yes"}, `-flat "yes": want on or off`},
	} {
		var stderr strings.Builder
		if code := run(context.Background(), c.args, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, stderr.String(), c.want)
		}
	}
	var stderr strings.Builder
	if code := run(context.Background(), []string{"-listen", "256.0.0.1:1", "-objects", "10"}, io.Discard, &stderr); code != 1 ||
		!strings.Contains(stderr.String(), `-listen "256.0.0.1:1": `) {
		t.Errorf("unusable address: exit %d, stderr %q; want 1 and the flag named", code, stderr.String())
	}
}

// TestSurvivesIdleFlood: connections beyond -max-conns-per-addr are closed
// as they come, those kept are closed after -idle-timeout, and a client
// from another address is served throughout; the last line counts both.
// (Before: every connection was kept, idle, for ever.) It runs on loopback,
// 127.0.0.1 flooding and 127.0.0.2 honest, and waits on socket reads with
// deadlines, never on sleeps.
func TestSurvivesIdleFlood(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	serveCtx, interrupt := context.WithCancel(ctx)
	out, w := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		code := run(serveCtx, []string{"-listen", "127.0.0.1:0", "-objects", "100", "-max-conns-per-addr", "2", "-idle-timeout", "300ms"}, w, io.Discard)
		w.Close()
		exit <- code
	}()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("no first line: %v", lines.Err())
	}
	first := lines.Text()
	addr := first[strings.LastIndex(first, " ")+1:]
	deadline := time.Now().Add(30 * time.Second)

	var flood []net.Conn
	for range 5 {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		_ = nc.SetDeadline(deadline)
		flood = append(flood, nc)
	}
	// While the flood holds its address's connections, a client from
	// another address is served.
	honest, err := (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).Dial("tcp", addr)
	if err != nil {
		t.Skipf("cannot dial from 127.0.0.2: %v", err)
	}
	defer honest.Close()
	_ = honest.SetDeadline(deadline)
	pingPong(t, honest, 1)
	// The flood's connections all end: three at once, two at the idle
	// timeout (and the honest one, idle too, with them).
	for i, nc := range flood {
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("flood connection %d: read %v, want it closed by the server", i, err)
		}
	}
	// Then the flood's address is served again.
	again, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	_ = again.SetDeadline(deadline)
	pingPong(t, again, 2)
	interrupt()
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text())
	}
	if code := <-exit; code != 0 {
		t.Fatalf("exit %d", code)
	}
	// The honest client's first connection may or may not have timed
	// out, idle, before the interrupt.
	if !regexp.MustCompile(`3 rejected over the connection caps, 0 evicted to make room, [23] timed out`).MatchString(rest.String()) {
		t.Errorf("last words %q, want 3 rejected and 2 or 3 timed out", rest.String())
	}
}

// pingPong sends a ping on nc and fails t unless its pong comes back.
func pingPong(t *testing.T, nc net.Conn, id uint64) {
	t.Helper()
	ping, _ := wire.AppendMessage(nil, id, wire.Ping{})
	if _, err := nc.Write(ping); err != nil {
		t.Fatalf("ping %d: %v", id, err)
	}
	f, err := wire.ReadFrame(nc, 0)
	if err != nil {
		t.Fatalf("ping %d: %v", id, err)
	}
	if got, msg, err := wire.DecodeMessage(f, 0); err != nil || got != id || msg != (wire.Pong{}) {
		t.Fatalf("ping %d: %d %v %v", id, got, msg, err)
	}
}

package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
	"github.com/peersched/peersched/xrpl/tcpnet"
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

package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/peersched/peersched/fetch"
	"github.com/peersched/peersched/ledger"
	"github.com/peersched/peersched/scheduler"
	"github.com/peersched/peersched/tcpnet"
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

func TestBadFlags(t *testing.T) {
	for _, a := range [][]string{{"-objects", "0"}, {"-latency", "1ms", "-jitter", "2ms"}, {"-loss", "2"}, {"extra"}, {"-ledger", "no-such-ledger.json"}} {
		if code := run(context.Background(), a, io.Discard, io.Discard); code != 2 {
			t.Errorf("%q: exit %d, want 2", a, code)
		}
	}
	if code := run(context.Background(), []string{"-listen", "256.0.0.1:1", "-objects", "10"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("unusable address: exit %d, want 1", code)
	}
}

package pebblestore

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"github.com/peersched/peersched/xrpl/fetch"
	"github.com/peersched/peersched/xrpl/ledger"
)

// killedWriterDir names the environment variable under which this test
// binary, run again by TestWriteSurvivesKill, becomes the process that
// writes to a store there and kills itself.
const killedWriterDir = "PEBBLESTORE_KILLED_WRITER_DIR"

// killedWrites is how many Writes, of one node each, the killed process
// makes before it kills itself: few, so that none of them has reached the
// file by the time of the kill unless Write made it.
const killedWrites = 3

// killedNodes are the nodes the killed process writes, one per Write.
func killedNodes() []fetch.Node {
	nodes := make([]fetch.Node, killedWrites)
	for i := range nodes {
		l, err := ledger.Generate(uint64(i+1), 1)
		if err != nil {
			panic(err)
		}
		data, _ := l.Get(l.Root())
		nodes[i] = fetch.Node{Hash: l.Root(), Data: data}
	}
	return nodes
}

// writeAndDie opens the store in dir, writes killedNodes one Write at a
// time, and kills its own process with SIGKILL the moment the last Write
// returns: no Close, no exit, nothing deferred runs.
func writeAndDie(dir string) {
	s, err := Open(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, n := range killedNodes() {
		if err := s.Write([]fetch.Node{n}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// TestWriteSurvivesKill: what Write has returned survives the process
// being killed (fetch.NodeStore's contract, on which a resumed fetch
// relies). A process writes three nodes, one Write each, and kills itself
// with SIGKILL as the last returns; the store, opened again, holds all
// three, in each of five runs. (Before: writes committed without a sync
// waited in Pebble's log buffer, in the process's memory, and the kill
// lost them: all fifteen, in each of three runs of this test.)
func TestWriteSurvivesKill(t *testing.T) {
	for run := range 5 {
		dir := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killedWriterDir+"="+dir)
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: the writer ended with %v, want killed by SIGKILL", run, err)
		}
		s := open(t, dir)
		for i, n := range killedNodes() {
			if _, ok := s.Get(n.Hash); !ok {
				t.Errorf("run %d: node %d of %d, written before the kill, is lost", run, i+1, killedWrites)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

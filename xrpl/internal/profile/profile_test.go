package profile

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// gunzipped reads file, a profile (gzip-compressed protocol buffers), and
// fails t unless it is one.
func gunzipped(t *testing.T, file string) []byte {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s is not a profile: %v", file, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil || len(b) == 0 {
		t.Fatalf("%s: %d bytes (%v)", file, len(b), err)
	}
	return b
}

// TestStartCPU: a profile is written once stopped; a second profile while
// one runs is refused, and its file closed.
func TestStartCPU(t *testing.T) {
	dir := t.TempDir()
	stop, err := StartCPU(filepath.Join(dir, "cpu"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := StartCPU(filepath.Join(dir, "second")); err == nil {
		t.Error("a second CPU profile started while one ran")
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	gunzipped(t, filepath.Join(dir, "cpu"))
	if _, err := StartCPU(filepath.Join(dir, "missing", "cpu")); err == nil {
		t.Error("a profile into a directory that does not exist started")
	}
}

// TestWriteHeap: the profile names what holds the heap.
func TestWriteHeap(t *testing.T) {
	file := filepath.Join(t.TempDir(), "heap")
	held := holdHeap()
	if err := WriteHeap(file); err != nil {
		t.Fatal(err)
	}
	held[0] = 1
	if !bytes.Contains(gunzipped(t, file), []byte("holdHeap")) {
		t.Error("the heap profile does not name holdHeap, which holds 32 MiB")
	}
	if err := WriteHeap(filepath.Join(file, "not-a-dir")); err == nil {
		t.Error("WriteHeap into a file's path: no error")
	}
}

//go:noinline
func holdHeap() []byte { return make([]byte, 32<<20) }

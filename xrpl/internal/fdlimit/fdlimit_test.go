//go:build unix

package fdlimit

import (
	"os"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestReadIsTheProcessLimit checks Read against the limit the kernel
// reports for this process, and that the current limit is within the
// maximum and above the files the test itself holds open.
func TestReadIsTheProcessLimit(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("no RLIMIT_NOFILE here: %v", err)
	}
	got := Read()
	want := Limit{Cur: uint64(rl.Cur), Max: uint64(rl.Max), Known: true}
	if got != want {
		t.Fatalf("Read() = %+v, want %+v", got, want)
	}
	if got.Cur > got.Max {
		t.Fatalf("current limit %d above its maximum %d", got.Cur, got.Max)
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err == nil && uint64(len(entries)) > got.Cur {
		t.Fatalf("%d files open, above the limit read, %d", len(entries), got.Cur)
	}
}

package pinned

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors, fatals []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}
func (r *recorder) Fatalf(format string, args ...any) { r.fatals = append(r.fatals, format) }
func (r *recorder) Fatal(args ...any)                 { r.fatals = append(r.fatals, "fatal") }

func TestCheck(t *testing.T) {
	path := filepath.ToSlash(filepath.Join(t.TempDir(), "table.md"))

	r := &recorder{TB: t}
	Check(r, path, "a table\n", false, "update-x")
	if len(r.fatals) != 1 || len(r.errors) != 0 {
		t.Fatalf("a missing file: fatals %v errors %v", r.fatals, r.errors)
	}

	r = &recorder{TB: t}
	Check(r, path, "a table\n", true, "update-x")
	if got, err := os.ReadFile(filepath.FromSlash(path)); err != nil || string(got) != "a table\n" || len(r.errors)+len(r.fatals) != 0 {
		t.Fatalf("update wrote %q, %v; failures %v %v", got, err, r.errors, r.fatals)
	}

	r = &recorder{TB: t}
	Check(r, path, "a table\n", false, "update-x")
	if len(r.errors)+len(r.fatals) != 0 {
		t.Fatalf("the same table: failures %v %v", r.errors, r.fatals)
	}

	r = &recorder{TB: t}
	Check(r, path, "another table\n", false, "update-x")
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "-%s") || len(r.fatals) != 0 {
		t.Fatalf("a changed table: errors %v fatals %v", r.errors, r.fatals)
	}
}

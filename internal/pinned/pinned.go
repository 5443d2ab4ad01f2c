// Package pinned keeps an experiment's outcome honest: the experiments run in
// virtual time from fixed seeds, so their tables are exact, and a test
// compares each with the copy committed in a testdata file, which a flag
// rewrites after a deliberate change.
package pinned

import (
	"os"
	"path/filepath"
	"testing"
)

// Check compares got with the file at path (slash-separated, relative to the
// test's package directory) and reports a difference as a test error that
// shows both and names updateFlag, the flag that rewrites the file. With
// update set it rewrites the file instead. A missing file is a fatal error.
func Check(t testing.TB, path, got string, update bool, updateFlag string) {
	t.Helper()
	file := filepath.FromSlash(path)
	if update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return // also after a Fatal of a testing.TB that does not end the goroutine
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run with -%s to write it)", err, updateFlag)
		return
	}
	if string(want) != got {
		t.Errorf("the experiment's outcome changed; if deliberately, rerun with -%s.\npinned:\n%s\nnow:\n%s", updateFlag, want, got)
	}
}

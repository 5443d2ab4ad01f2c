package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goBlocks returns the bodies of the ```go fences in a Markdown text.
func goBlocks(markdown string) []string {
	var blocks []string
	var body strings.Builder
	in := false
	for line := range strings.Lines(markdown) {
		switch {
		case !in && strings.TrimSpace(line) == "```go":
			in = true
			body.Reset()
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, body.String())
		case in:
			body.WriteString(line)
		}
	}
	return blocks
}

// TestGoBlocks: the extraction takes the go fences whole and nothing else.
func TestGoBlocks(t *testing.T) {
	md := "text\n```go\npackage main\n\nfunc main() {}\n```\n```sh\ngo run .\n```\n```go\nx := 1\n```\n"
	got := goBlocks(md)
	want := []string{"package main\n\nfunc main() {}\n", "x := 1\n"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("goBlocks = %q, want %q", got, want)
	}
}

// TestREADMEExampleBuildsAndRuns: the README's Go block is a whole program
// that a module of its own, requiring only the library, vets, builds and
// runs; it prints the answer of one of its two peers.
func TestREADMEExampleBuildsAndRuns(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(readme))
	if len(blocks) != 1 || !strings.HasPrefix(blocks[0], "package main\n") {
		t.Fatalf("the README has %d Go blocks; want one, a whole program (package main)", len(blocks))
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command, needed to build the README's example: %v", err)
	}
	mod := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(mod, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("main.go", blocks[0])
	write("go.mod", "module example.com/readme\n\ngo 1.25.0\n\nrequire github.com/peersched/peersched v0.0.0\n\nreplace github.com/peersched/peersched => "+root+"\n")
	sums, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sums))
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), goTool, args...)
		cmd.Dir = mod
		// Outside the workspace, with the library's own requirements and
		// checksums.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s\nthe README's program:\n%s", strings.Join(args, " "), err, out, blocks[0])
		}
		return string(out)
	}
	goCmd("vet", ".")
	out := goCmd("run", ".")
	if !regexp.MustCompile(`^ledger 42, from (alice|bob)\n$`).MatchString(out) {
		t.Fatalf("the README's program printed %q, want the answer of alice or bob", out)
	}
}

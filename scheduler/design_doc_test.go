package scheduler_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDesignDocListsEveryPromiseWithItsTests keeps docs/design.md and the
// promise tests in step: the design's numbered promises run from 1 with no
// gap, and each has at least one TestPromiseNN_ test in this package, and no
// test pins a promise the design does not state.
func TestDesignDocListsEveryPromiseWithItsTests(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "design.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## The promises\n")
	require.True(t, ok, "docs/design.md has no section \"## The promises\"")
	section, _, _ = strings.Cut(section, "\n## ")

	var stated []int
	for _, m := range regexp.MustCompile(`(?m)^(\d+)\. \*\*`).FindAllStringSubmatch(section, -1) {
		n, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		stated = append(stated, n)
	}
	require.NotEmpty(t, stated, "no numbered promises in docs/design.md")
	for i, n := range stated {
		require.Equal(t, i+1, n, "docs/design.md numbers its promises 1, 2, 3, … with no gap")
	}

	tested := map[int]bool{}
	files, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	name := regexp.MustCompile(`^TestPromise(\d\d)_`)
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			if m := name.FindStringSubmatch(fn.Name.Name); m != nil {
				n, _ := strconv.Atoi(m[1])
				tested[n] = true
			}
		}
	}
	for _, n := range stated {
		require.True(t, tested[n], "promise %d of docs/design.md has no TestPromise%02d_ test", n, n)
	}
	for n := range tested {
		require.LessOrEqual(t, n, len(stated), "TestPromise%02d_ pins a promise docs/design.md does not state", n)
	}
}

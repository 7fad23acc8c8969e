package tui

import (
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestNoOtherFrontend: the TUI, a frontend, imports no other frontend's
// package: the cluster's view of a pod is data (internal/cluster), a
// container's line formatting (internal/render), not the --auto report's.
func TestNoOtherFrontend(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			for _, other := range []string{"/internal/report", "/internal/live"} {
				if strings.HasSuffix(p, other) {
					t.Errorf("%s imports %s, another frontend", e.Name(), p)
				}
			}
		}
	}
}

// Package golden compares test output with golden files and rewrites them
// when the tests run with -update. It is imported by tests only.
package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	// teatest's golden package (linked into the TUI tests) registers the
	// same -update flag. Packages initialise in import-path order, so it is
	// already there when it is linked in; register it only when it is not.
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files instead of comparing with them")
	}
}

// Updating reports whether the tests run with -update.
func Updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// Check compares got with the golden file at path. With -update it writes
// got to path (making its directory) instead. A difference is reported at
// the first line and column that differ.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if Updating() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("golden: %v", err)
			return
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("golden: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden: %v (run the test with -update to create it)", err)
		return
	}
	if string(want) != got {
		t.Errorf("%s differs (run the test with -update to accept the new output, then review the diff): %s",
			path, FirstDiff(string(want), got))
	}
}

// FirstDiff describes the first line where want and got differ, with the
// column and some context either side.
func FirstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a == b {
			continue
		}
		k := 0
		for k < len(a) && k < len(b) && a[k] == b[k] {
			k++
		}
		from := max(0, k-80)
		return fmt.Sprintf("line %d, column %d:\n  want …%s\n  got  …%s", i+1, k+1, a[from:min(len(a), k+120)], b[from:min(len(b), k+120)])
	}
	return "(no line differs)"
}

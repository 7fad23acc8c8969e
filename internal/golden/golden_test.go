package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Errorf(f string, a ...any) { r.errs = append(r.errs, f) }
func (r *recorder) Fatalf(f string, a ...any) { r.errs = append(r.errs, f) }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("a\nb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, got string
		fails     bool
	}{
		{"equal", "a\nb\n", false},
		{"differs", "a\nc\n", true},
		{"longer", "a\nb\nc\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			Check(r, path, tc.got)
			if (len(r.errs) > 0) != tc.fails {
				t.Errorf("Check(%q) failures = %v, want failing=%v", tc.got, r.errs, tc.fails)
			}
		})
	}
	r := &recorder{TB: t}
	Check(r, filepath.Join(t.TempDir(), "missing.golden"), "x")
	if len(r.errs) != 1 {
		t.Errorf("a missing golden file: failures = %v, want one", r.errs)
	}
}

func TestFirstDiff(t *testing.T) {
	for _, tc := range []struct{ want, got, has string }{
		{"a\nb", "a\nc", "line 2, column 1"},
		{"abc", "abd", "line 1, column 3"},
		{"a", "a\nb", "line 2, column 1"},
		{"same", "same", "(no line differs)"},
	} {
		if d := FirstDiff(tc.want, tc.got); !strings.Contains(d, tc.has) {
			t.Errorf("FirstDiff(%q, %q) = %q, want it to contain %q", tc.want, tc.got, d, tc.has)
		}
	}
}

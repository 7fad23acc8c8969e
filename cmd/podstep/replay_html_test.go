package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplayHTMLBadInput: --html of a file that is not a recording is one
// error, exit 2, and no page; of a recording cut short, the page up to the
// cut, which says where, then exit 2; a page that cannot be written is an
// error that names it, and leaves nothing beside it.
func TestReplayHTMLBadInput(t *testing.T) {
	dir := t.TempDir()
	notRec := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(notRec, []byte("apiVersion: v1\nkind: Pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := readRecording(t, "../../testdata/recordings/crashloop.v1.rec.gz")
	cut := filepath.Join(dir, "cut.rec")
	if err := os.WriteFile(cut, []byte(full[:len(full)*2/3]), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, file, out string
		code            int
		stderr          string // in the error
		page            string // in the page; "" when there must be none
	}{
		{"not a recording", notRec, filepath.Join(dir, "a.html"), 2, "not a podstep recording: line 1 is not a JSON object", ""},
		{"cut short", cut, filepath.Join(dir, "b.html"), 2, "cut.rec: line ", `id="damage">The recording stops here: line `},
		{"unwritable", "../../testdata/recordings/init.rec.gz", filepath.Join(dir, "no", "such", "c.html"), 2, "such/c.html: no such file or directory", ""},
		{"whole", "../../testdata/recordings/init.rec.gz", filepath.Join(dir, "d.html"), 0, "wrote the timeline page", `data-step="1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := run(t, "replay", tc.file, "--html", tc.out)
			if code != tc.code || !strings.Contains(errOut, tc.stderr) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stderr with %q", code, out, errOut, tc.code, tc.stderr)
			}
			data, err := os.ReadFile(tc.out)
			switch {
			case tc.page == "" && err == nil:
				t.Errorf("a page was written")
			case tc.page != "" && (err != nil || !strings.Contains(string(data), tc.page)):
				t.Errorf("the page lacks %q (%v)", tc.page, err)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

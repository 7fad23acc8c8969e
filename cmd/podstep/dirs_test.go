package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestRelativeDirsMadeAbsolute: a relative --root-dir/--log-dir is taken
// from the working directory and used absolute (runc refuses relative mount
// sources; cleanup runs from elsewhere).
func TestRelativeDirsMadeAbsolute(t *testing.T) {
	cwd := t.TempDir()
	pod, _ := filepath.Abs("../../testdata/pods/hello.yaml")
	cmd := exec.Command(bin, "run", "--auto", "--sim", "-o", "json", "--grace-period", "0", "-f", pod, "--root-dir", "state", "--log-dir", "logs")
	cmd.Dir = cwd
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{
		`{"key":"pod dir","value":"` + filepath.Join(cwd, "state", "pods") + `/`,
		`"log_directory":"` + filepath.Join(cwd, "logs", "default_hello_"),
		`"podstep.dev/root-dir":"` + filepath.Join(cwd, "state") + `"`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %s", want)
		}
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPlanCrictlAllOrNone: `plan --crictl DIR` refuses a DIR that is a
// symbolic link (nothing written where it points), and writes all its
// files or none: a later file refused leaves no earlier one behind
// (issue 34, hole 8).
func TestPlanCrictlAllOrNone(t *testing.T) {
	init := "../../testdata/pods/init.yaml"
	t.Run("symlinked DIR", func(t *testing.T) {
		base := t.TempDir()
		elsewhere := filepath.Join(base, "elsewhere")
		if err := os.Mkdir(elsewhere, 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(base, "out")
		if err := os.Symlink(elsewhere, link); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, "plan", "-f", init, "--crictl", link)
		if code != ExitUsage || !strings.Contains(errOut, link+" is a symbolic link") {
			t.Errorf("exit %d, %q; want 2 and %q", code, errOut, link+" is a symbolic link")
		}
		if ents, _ := os.ReadDir(elsewhere); len(ents) > 0 {
			t.Errorf("wrote through the link: %v", ents)
		}
	})
	t.Run("a later file refused", func(t *testing.T) {
		dir := t.TempDir()
		// app-container-config.json, the last file, is a link: refused.
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, "app-container-config.json")); err != nil {
			t.Fatal(err)
		}
		code, _, errOut := run(t, "plan", "-f", init, "--crictl", dir)
		if code != ExitUsage || !strings.Contains(errOut, "app-container-config.json is a symbolic link") {
			t.Errorf("exit %d, %q; want 2 and the link refused", code, errOut)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("DIR holds %v; want only the refused link (all files or none)", names)
		}
	})
}

// TestRecordOtherUsersFile: `run --record OUT`, as root, where a real
// unprivileged user (uid 65534, setpriv) left a file of theirs at OUT in
// a shared sticky directory: OUT becomes a new file of root's, and their
// inode is untouched (issue 34, hole 8: the recording went into their
// file, which stayed theirs to read and change).
func TestRecordOtherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the file is made as uid 65534 with setpriv, the run is root's")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	base := t.TempDir()
	shared := filepath.Join(base, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(shared, "run.rec")
	mk := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
		"/bin/sh", "-c", `printf theirs > "$1" && chmod 666 "$1"`, "sh", out)
	if b, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("as uid 65534: %v: %s", err, b)
	}
	keep := filepath.Join(base, "their-inode")
	if err := os.Link(out, keep); err != nil {
		t.Fatal(err)
	}
	root, logs := dirs(t)
	if code, _, errOut := run(t, "run", "--auto", "-f", "../../testdata/pods/hello.yaml", "--record", out, "--root-dir", root, "--log-dir", logs); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 0 {
		t.Errorf("%s is uid %d's; want root's", out, uid)
	}
	if b, _ := os.ReadFile(out); !strings.HasPrefix(string(b), `{"type":"header"`) {
		t.Errorf("%s is not the recording: %.60q", out, b)
	}
	if b, _ := os.ReadFile(keep); string(b) != "theirs" {
		t.Errorf("their inode was written into: %.60q", b)
	}
}

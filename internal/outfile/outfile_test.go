package outfile

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func writeString(s string) func(io.Writer) error {
	return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
}

// entries lists dir, to find temporary files left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestRefused: a symlink, a FIFO, a device (a fresh /dev/null-like node
// made here, never the real one), a socket and a directory are refused by
// Write and Open, left as they were, and nothing else is made beside them.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]string{
		"link": "a symbolic link", "fifo": "a named pipe (FIFO)", "null": "a device", "dir": "a directory", "sock": "a socket",
	}
	if err := os.Symlink(target, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mknod(filepath.Join(dir, "null"), syscall.S_IFCHR|0o666, int(1<<8|3)); err != nil {
		if os.Geteuid() == 0 {
			t.Fatal(err)
		}
		t.Logf("mknod needs root (%v): the device case is not tried", err)
		delete(nodes, "null")
	}
	if err := os.Mkdir(filepath.Join(dir, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := listenUnix(filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	before := entries(t, dir)
	for name, what := range nodes {
		p := filepath.Join(dir, name)
		fi0, _ := os.Lstat(p)
		err := Write(p, Options{}, writeString("page"))
		var ue *UnsafeError
		if !errors.As(err, &ue) || ue.What != what || !strings.Contains(err.Error(), "--force") {
			t.Errorf("Write %s: %v, want it refused as %s", name, err, what)
		}
		if _, err := Open(p, false); !errors.As(err, &ue) {
			t.Errorf("Open %s: %v, want it refused", name, err)
		}
		fi1, err := os.Lstat(p)
		if err != nil || fi1.Mode() != fi0.Mode() {
			t.Errorf("%s changed: %v → %v (%v)", name, fi0.Mode(), fi1.Mode(), err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
	if got := entries(t, dir); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("dir now holds %v, was %v", got, before)
	}
}

// TestForce: --force writes through a link to its target, and into a FIFO.
func TestForce(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, Options{Force: true}, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Errorf("target holds %q", b)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced")
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := Write(fifo, Options{Force: true}, writeString("through")); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Errorf("the FIFO's reader got %q", s)
	}
}

// TestWriteReplacesAtomically: a regular file is replaced whole; a failed
// write and an interrupted one (a real SIGINT to this process) leave it as
// it was and no temporary file.
func TestWriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.html")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, Options{}, writeString("new")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("got %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", fi.Mode())
	}
	boom := errors.New("boom")
	if err := Write(p, Options{}, func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Errorf("failed write: %v", err)
	}
	interrupted := func(w io.Writer) error {
		if _, err := io.WriteString(w, "half"); err != nil {
			return err
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			return err
		}
		for i := 0; i < 200; i++ { // the write goes on until it fails
			if _, err := io.WriteString(w, strings.Repeat("x", 1<<10)); err != nil {
				return err
			}
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	}
	err := Write(p, Options{}, interrupted)
	var ie *InterruptedError
	if !errors.As(err, &ie) || ie.Signal != syscall.SIGINT {
		t.Errorf("interrupted write: %v, want an InterruptedError for SIGINT", err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("after a failed and an interrupted write the file holds %q", b)
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("left behind: %v", got)
	}
}

// TestOpen: Open truncates a regular file and makes a new one.
func TestOpen(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.rec")
	if err := os.WriteFile(p, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "rec"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, _ := os.ReadFile(p); string(b) != "rec" {
		t.Errorf("got %q", b)
	}
}

// TestOtherUsersFile: an output path where another local user (a real
// unprivileged one, uid 65534 through setpriv) put a file of their own, in
// a shared sticky directory as /tmp is, is replaced by a new file of
// podstep's user, never written into: their inode keeps its owner, mode
// and contents, and cannot read or change what podstep wrote (issue 34,
// hole 8: `run --record OUT` wrote into it, and it stayed theirs). Open
// (recordings, written as the run goes) and Write (every other output).
func TestOtherUsersFile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes a file as uid 65534 with setpriv, then writes as root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("no setpriv")
	}
	for _, tc := range []struct {
		name  string
		write func(path string) error
	}{
		{"Open", func(path string) error {
			f, err := Open(path, false)
			if err != nil {
				return err
			}
			if _, err := io.WriteString(f, "root's recording"); err != nil {
				return err
			}
			return f.Close()
		}},
		{"Write", func(path string) error {
			return Write(path, Options{}, func(w io.Writer) error {
				_, err := io.WriteString(w, "root's recording")
				return err
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "shared")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{filepath.Dir(filepath.Dir(dir)), filepath.Dir(dir)} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(dir, 0o1777); err != nil { // as /tmp
				t.Fatal(err)
			}
			out := filepath.Join(dir, "run.rec")
			cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--",
				"/bin/sh", "-c", `printf theirs > "$1" && chmod 666 "$1"`, "sh", out)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("as uid 65534: %v: %s", err, b)
			}
			keep := filepath.Join(t.TempDir(), "their-inode")
			if err := os.Link(out, keep); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(out); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if st := fi.Sys().(*syscall.Stat_t); st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 {
				t.Errorf("%s is uid %d, mode %04o; want root's, writable by no one else", out, st.Uid, fi.Mode().Perm())
			}
			if b, _ := os.ReadFile(out); string(b) != "root's recording" {
				t.Errorf("%s holds %q", out, b)
			}
			theirs, err := os.Stat(keep)
			if err != nil {
				t.Fatal(err)
			}
			if os.SameFile(fi, theirs) {
				t.Errorf("%s is still uid 65534's inode", out)
			}
			if b, _ := os.ReadFile(keep); string(b) != "theirs" || theirs.Sys().(*syscall.Stat_t).Uid != 65534 {
				t.Errorf("their inode was changed: %q, uid %d", b, theirs.Sys().(*syscall.Stat_t).Uid)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".run.rec.*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}

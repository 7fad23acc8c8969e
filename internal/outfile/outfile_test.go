package outfile

import (
	"errors"
	"io"
	"os"
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
	os.WriteFile(target, []byte("keep"), 0o600)
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
	os.Mkdir(filepath.Join(dir, "dir"), 0o755)
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
	os.WriteFile(target, []byte("old"), 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(target, link)
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
	syscall.Mkfifo(fifo, 0o600)
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
	os.WriteFile(p, []byte("old"), 0o600)
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
	if err := Write(p, Options{}, func(w io.Writer) error { io.WriteString(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Errorf("failed write: %v", err)
	}
	interrupted := func(w io.Writer) error {
		io.WriteString(w, "half")
		syscall.Kill(os.Getpid(), syscall.SIGINT)
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
	os.WriteFile(p, []byte("old contents"), 0o600)
	f, err := Open(p, false)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(f, "rec")
	f.Close()
	if b, _ := os.ReadFile(p); string(b) != "rec" {
		t.Errorf("got %q", b)
	}
}

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podstep/podstep/internal/manifest"
)

// nowhere is a runtime endpoint that does not exist: contacting it would be
// exit 3, so exit 2 proves nothing was sent.
const nowhere = "unix:///nonexistent/podstep-bounds.sock"

// countingZeros reads n zero bytes and counts how many were read.
type countingZeros struct{ n, read int64 }

func (z *countingZeros) Read(p []byte) (int, error) {
	if z.read >= z.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), z.n-z.read)]
	clear(p)
	z.read += int64(len(p))
	return len(p), nil
}

// TestStdinSizeLimit: 64 MiB of zeros on standard input are refused with
// exit 2 after reading MaxSize+1 bytes.
func TestStdinSizeLimit(t *testing.T) {
	for _, cmd := range [][]string{{"run", "--auto", "-r", nowhere}, {"plan"}} {
		root, logs := dirs(t)
		z := &countingZeros{n: 64 << 20}
		var out, errb bytes.Buffer
		args := append(append([]string{}, cmd...), "-f", "-", "--root-dir", root, "--log-dir", logs)
		code := Execute(args, z, &out, &errb)
		if code != ExitUsage {
			t.Fatalf("%v: exit %d, want 2; stderr %s", cmd, code, errb.String())
		}
		if want := "error: <stdin>: the manifest is larger than 3 MiB (3145728 bytes); expected at most 3 MiB"; !strings.HasPrefix(errb.String(), want) {
			t.Errorf("%v: stderr %q, want %q...", cmd, errb.String(), want)
		}
		if z.read > manifest.MaxSize+1 {
			t.Errorf("%v: read %d bytes of standard input, want at most MaxSize+1 = %d", cmd, z.read, manifest.MaxSize+1)
		}
		if _, err := os.Stat(root); !os.IsNotExist(err) {
			t.Errorf("%v: root dir created for bad input", cmd)
		}
	}
}

// TestBinaryInputBounds runs the podstep binary on inputs far larger than
// the limit: a 1 GiB (sparse) file and an endless pipe of zeros. Both are
// exit 2 with the size error; the file is not read into memory (the
// process stays well under its size) and the pipe is not drained.
func TestBinaryInputBounds(t *testing.T) {
	root, logs := dirs(t)
	args := []string{"run", "--auto", "-r", nowhere, "--root-dir", root, "--log-dir", logs}
	const wantErr = "the manifest is larger than 3 MiB (3145728 bytes)"

	t.Run("large file", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "huge.yaml")
		if err := os.WriteFile(f, []byte("apiVersion: v1\nkind: Pod\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(f, 1<<30); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, append(args, "-f", f)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != ExitUsage {
			t.Fatalf("exit %d (%v), want 2; stderr %s", code, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), f+": "+wantErr) {
			t.Errorf("stderr %q, want %q", stderr.String(), wantErr)
		}
		// Reading the file whole would take more than 1 GiB.
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > 200<<10 {
			t.Errorf("max RSS %d KiB for a 1 GiB file, want under 200 MiB: it was read whole", ru.Maxrss)
		}
	})

	t.Run("endless pipe", func(t *testing.T) {
		cmd := exec.Command(bin, append(args, "-f", "-")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Write until podstep stops reading (the write fails once it has
		// exited) or 64 MiB went through.
		written, chunk := 0, make([]byte, 64<<10)
		for written < 64<<20 {
			n, err := in.Write(chunk)
			written += n
			if err != nil {
				break
			}
		}
		in.Close()
		_ = cmd.Wait() // exits 2, an *exec.ExitError: the exit code is checked below
		if code := cmd.ProcessState.ExitCode(); code != ExitUsage {
			t.Fatalf("exit %d, want 2; stderr %s", code, stderr.String())
		}
		if !strings.Contains(stderr.String(), "<stdin>: "+wantErr) {
			t.Errorf("stderr %q, want %q", stderr.String(), wantErr)
		}
		// What podstep read, plus at most what the pipe buffers (64 KiB by
		// default, 1 MiB at most).
		if written > manifest.MaxSize+1+(1<<20)+len(chunk) {
			t.Errorf("podstep took %d bytes from the pipe, want it to stop after MaxSize+1 = %d", written, manifest.MaxSize+1)
		}
	})

	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("root dir created for bad input")
	}
}

// TestBinaryHostileManifests runs the podstep binary on some of the hostile
// manifests of testdata/bad: exit 2, the golden message, nothing created.
func TestBinaryHostileManifests(t *testing.T) {
	for _, name := range []string{"uid-path-traversal", "item-path-dotdot", "trailing-binary", "yaml-alias-bomb", "quantity-overflow", "quantity-exponent"} {
		t.Run(name, func(t *testing.T) {
			root, logs := dirs(t)
			f := "../../testdata/bad/" + name + ".yaml"
			cmd := exec.Command(bin, "run", "--auto", "-f", f, "-r", nowhere, "--root-dir", root, "--log-dir", logs)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if code := cmd.ProcessState.ExitCode(); code != ExitUsage {
				t.Fatalf("exit %d (%v), want 2; stderr %s", code, err, stderr.String())
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".err")
			if err != nil {
				t.Fatal(err)
			}
			got := strings.TrimPrefix(strings.TrimSpace(stderr.String()), "error: ../../")
			if got != strings.TrimSpace(string(want)) {
				t.Errorf("stderr %q\nwant   %q", got, want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout not empty: %q", stdout.String())
			}
			for _, d := range []string{root, logs} {
				if _, err := os.Stat(d); !os.IsNotExist(err) {
					t.Errorf("%s created for bad input", d)
				}
			}
		})
	}
}

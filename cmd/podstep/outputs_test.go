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
	"time"

	"github.com/podstep/podstep/internal/sim"
)

// TestOutputsRefuseNonRegular: every file podstep writes (replay --html,
// run --record, plan --crictl's files) is refused, exit 2, when its path
// is a symbolic link, a FIFO or a device (a fresh /dev/null-like node made
// here, never the real one), and left as it was; --force writes through.
// "-" is stdout.
func TestOutputsRefuseNonRegular(t *testing.T) {
	const rec = "../../testdata/recordings/init.rec.gz"
	const pod = "../../testdata/pods/hello.yaml"
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	mk := map[string]func(string) error{
		"symlink": func(p string) error { return os.Symlink(target, p) },
		"fifo":    func(p string) error { return syscall.Mkfifo(p, 0o600) },
		"device": func(p string) error {
			return syscall.Mknod(p, syscall.S_IFCHR|0o666, int(1<<8|3))
		},
	}
	root, logs := dirs(t)
	for kind, make := range mk {
		for _, out := range []struct {
			name string
			args func(p string) []string
		}{
			{"replay --html", func(p string) []string { return []string{"replay", rec, "--html", p} }},
			{"run --record", func(p string) []string {
				return []string{"run", "--auto", "--sim", "--settle", "0", "--grace-period", "0", "-f", pod, "--root-dir", root, "--log-dir", logs, "--record", p}
			}},
			{"plan --crictl", func(p string) []string {
				d := filepath.Dir(p)
				os.Rename(p, filepath.Join(d, "pod-config.json"))
				return []string{"plan", "-f", pod, "--crictl", d}
			}},
		} {
			t.Run(kind+"/"+out.name, func(t *testing.T) {
				sub := t.TempDir()
				p := filepath.Join(sub, "out")
				if err := make(p); err != nil {
					if kind == "device" && os.Geteuid() != 0 {
						t.Skipf("mknod needs root: %v", err)
					}
					t.Fatal(err)
				}
				args := out.args(p)
				if out.name == "plan --crictl" {
					p = filepath.Join(sub, "pod-config.json")
				}
				fi0, _ := os.Lstat(p)
				code, _, errOut := run(t, args...)
				if code != ExitUsage || !strings.Contains(errOut, "not a regular file: refusing to write over it (--force writes anyway)") {
					t.Errorf("exit %d, stderr %q; want 2 and the refusal", code, errOut)
				}
				if fi1, err := os.Lstat(p); err != nil || fi1.Mode() != fi0.Mode() {
					t.Errorf("the %s was replaced: %v → %v", kind, fi0.Mode(), fi1.Mode())
				}
				if b, _ := os.ReadFile(target); string(b) != "keep" {
					t.Errorf("the link's target was written")
				}
				if left, _ := filepath.Glob(filepath.Join(sub, ".*")); len(left) != 0 {
					t.Errorf("left behind: %v", left)
				}
			})
		}
	}
	// --force: through the link to its target.
	link := filepath.Join(dir, "link.html")
	os.Symlink(target, link)
	if code, _, errOut := run(t, "replay", rec, "--html", link, "--force"); code != ExitOK {
		t.Fatalf("--force: exit %d: %s", code, errOut)
	}
	if b, _ := os.ReadFile(target); !bytes.Contains(b, []byte("<html")) {
		t.Errorf("--force did not write the page through the link")
	}
	// -: stdout.
	if code, out, _ := run(t, "replay", rec, "--html", "-"); code != ExitOK || !strings.Contains(out, "<html") {
		t.Errorf("--html -: exit %d, stdout %.80q", code, out)
	}
}

// TestSignalExitCodes: a signal ends every command that handles one with
// 128+N after cleaning up: proxy (SIGINT 130, SIGTERM 143, SIGHUP 129).
func TestSignalExitCodes(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run("proxy/"+sig.String(), func(t *testing.T) {
			dir, err := os.MkdirTemp("", "podstep-sig")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			srv, err := sim.Start(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			sock := filepath.Join(dir, "p.sock")
			cmd := exec.Command(bin, "proxy", "--auto", "--upstream", srv.Endpoint(), "--listen", "unix://"+sock)
			var eb bytes.Buffer
			cmd.Stderr = &eb
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 250; i++ {
				if _, err := os.Stat(sock); err == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			cmd.Wait()
			if got, want := cmd.ProcessState.ExitCode(), 128+int(sig); got != want {
				t.Errorf("proxy after %v: exit %d, want %d; stderr:\n%s", sig, got, want, eb.String())
			}
		})

	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

var _ = io.Discard

// TestRecordWriteErrorOnce: a --record that cannot be written (a fresh
// /dev/full-like node, with --force) is said once on stderr, not at the
// start and again at the end; the run's own exit code stands.
func TestRecordWriteErrorOnce(t *testing.T) {
	full := filepath.Join(t.TempDir(), "full")
	if err := syscall.Mknod(full, syscall.S_IFCHR|0o666, int(1<<8|7)); err != nil {
		t.Skipf("mknod needs root: %v", err)
	}
	root, logs := dirs(t)
	code, _, errOut := run(t, "run", "--auto", "--sim", "--settle", "0", "--grace-period", "0", "-f", "../../testdata/pods/hello.yaml",
		"--root-dir", root, "--log-dir", logs, "--record", full, "--force")
	if n := strings.Count(errOut, "--record "+full+":"); n != 1 || code != ExitOK {
		t.Errorf("exit %d, the write error said %d times, want once:\n%s", code, n, errOut)
	}
}

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestProxyUnderTimeout runs the proxy binary under umask 000 and
// coreutils timeout (4 s), in front of the simulated runtime: its socket is 0660
// and the directory it made 0750 while it serves; timeout's SIGTERM (sent
// twice: to the proxy, then its process group) ends it once, cleanly, and
// the socket is gone.
func TestProxyUnderTimeout(t *testing.T) {
	d, upstream := simAndDir(t, "psk")
	sock := filepath.Join(d, "run", "p.sock")
	for i := range 3 {
		// (4 s: on a loaded machine, as CI's beside the suites, the proxy's
		// start took over a second.)
		cmd := exec.Command("sh", "-c", `umask 000; exec timeout 4 "$@"`, "sh",
			bin, "proxy", "--auto", "--listen", "unix://"+sock, "--upstream", upstream)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }() // its exit code is checked below
		var mode, dirMode os.FileMode
	wait:
		for {
			if fi, err := os.Lstat(sock); err == nil {
				mode = fi.Mode()
				fi, _ = os.Stat(filepath.Dir(sock))
				dirMode = fi.Mode().Perm()
				break
			}
			select {
			case <-exited:
				break wait
			case <-time.After(20 * time.Millisecond):
			}
		}
		<-exited
		if mode&os.ModeSocket == 0 || mode.Perm() != 0o660 {
			t.Errorf("run %d: socket mode %s under umask 000, want srw-rw----", i, mode)
		}
		if i == 0 && dirMode != 0o750 {
			t.Errorf("made dir mode %s, want 0750", dirMode)
		}
		if code := cmd.ProcessState.ExitCode(); code != 124 {
			t.Errorf("run %d: exit %d, want timeout's 124; stderr %s", i, code, stderr.String())
		}
		if strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "again") {
			t.Errorf("run %d: stderr %s", i, stderr.String())
		}
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Errorf("run %d: socket left after the proxy ended: %v", i, err)
		}
		if ents, _ := os.ReadDir(filepath.Dir(sock)); len(ents) != 0 {
			t.Errorf("run %d: left in the socket's dir: %v", i, ents)
		}
	}
}

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestInputFilesBounded: `--node /dev/zero` (and a --node file over the
// bound) is one clear error and exit 2 on plan, run and bench, after
// reading at most the bound; so is --kubeconfig /dev/zero. The binary runs
// under a 1 GiB address-space limit, where reading the device whole dies
// out of memory (issue 34, hole 7: it did, at 1.2 GB).
func TestInputFilesBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big-node.yaml")
	if err := os.WriteFile(big, []byte("apiVersion: v1\nkind: Node\n"+strings.Repeat("#", 4<<20)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hello := "../../testdata/pods/hello.yaml"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"plan /dev/zero", []string{"plan", "-f", hello, "--node", "/dev/zero"}, "--node: read node file: /dev/zero: binary data"},
		{"run /dev/zero", []string{"run", "--auto", "-f", hello, "-r", nowhere, "--node", "/dev/zero"}, "--node: read node file: /dev/zero: binary data"},
		{"bench /dev/zero", []string{"bench", "-f", hello, "-r", nowhere, "--node", "/dev/zero"}, "--node: read node file: /dev/zero: binary data"},
		{"plan big", []string{"plan", "-f", hello, "--node", big}, "larger than 3 MiB: expected a v1 Node (YAML or JSON) of at most 3 MiB"},
		{"plan --kubeconfig /dev/zero", []string{"plan", "-f", hello, "--kubeconfig", "/dev/zero"}, "kubeconfig: /dev/zero: binary data"},
		{"run --kubeconfig /dev/zero", []string{"run", "--auto", "-f", hello, "-r", nowhere, "--kubeconfig", "/dev/zero"}, "kubeconfig: /dev/zero: binary data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			code, errOut := runBounded(t, 1<<30, append(tc.args, "--root-dir", filepath.Join(root, "root"), "--log-dir", filepath.Join(root, "logs"))...)
			if code != ExitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "out of memory") {
				t.Errorf("exit %d, stderr %.400q; want 2 and %q", code, errOut, tc.want)
			}
		})
	}
}

// runBounded runs the podstep binary with its address space limited to
// limit bytes (ulimit -v) and a minute to finish; it returns the exit code
// and stderr.
func runBounded(t *testing.T, limit int64, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sh := `ulimit -v "$1" && shift && exec "$@"`
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", sh, "sh", strconv.FormatInt(limit>>10, 10), bin}, args...)...)
	var errb strings.Builder
	cmd.Stderr = &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("podstep %s: still running after a minute", strings.Join(args, " "))
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, errb.String()
}

// TestEchoedInputCut: a 100 KB name or value given on the command line
// comes back in the error as 80 characters and its size, not whole
// (issue 34: `scenarios show` echoed a 100 KB name).
func TestEchoedInputCut(t *testing.T) {
	long := strings.Repeat("x", 100000)
	for _, args := range [][]string{
		{"scenarios", "show", long},
		{"plan", "--scenario", long},
		{"plan", "--pod", long + "/a/b"},
	} {
		t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
			code, _, errOut := run(t, args...)
			if code != ExitUsage || len(errOut) > 1000 || !strings.Contains(errOut, "…(1000") {
				t.Errorf("exit %d, %d bytes of stderr: %.300q; want 2 and the input cut", code, len(errOut), errOut)
			}
		})
	}
}

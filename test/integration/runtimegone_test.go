//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podstep/podstep/test/internal/testenv"
)

// harness is a second containerd of the test's own (hack/containerd-up.sh
// with its own dir, CNI network and registry port), for a test that kills
// it: the shared one must stay up.
type harness struct {
	dir      string
	endpoint string
	env      []string
	repo     string
}

// ownHarness brings up a second harness beside the suite's and tears it
// down when the test ends.
func ownHarness(t *testing.T, e *env) *harness {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test starts its own containerd: it must run as root (hack/test.sh does)")
	}
	h := &harness{dir: envOr("PODSTEP_RUNTIME_GONE_DIR", "/var/lib/podstep-runtime-gone"), repo: e.repo}
	// The same containerd as the suite's (PODSTEP_RUNTIME names it); its own
	// folder, network and registry port, apart from both suite harnesses.
	// PODSTEP_RUNTIME_GONE_{DIR,SUBNET,BRIDGE,NETWORK,PORT} move them, so that
	// two suites on one machine do not share the second harness; CI keeps the
	// defaults.
	containerd := "1.6"
	if strings.Contains(os.Getenv("PODSTEP_RUNTIME"), " v2.") {
		containerd = "2"
	}
	t.Logf("second harness: PODSTEP_CONTAINERD=%s", containerd)
	h.env = append(os.Environ(), "PODSTEP_CONTAINERD="+containerd,
		"PODSTEP_HARNESS_DIR="+h.dir,
		"PODSTEP_CNI_SUBNET="+envOr("PODSTEP_RUNTIME_GONE_SUBNET", "10.88.79.0/24"),
		"PODSTEP_CNI_BRIDGE="+envOr("PODSTEP_RUNTIME_GONE_BRIDGE", "pstgone0"),
		"PODSTEP_CNI_NETWORK="+envOr("PODSTEP_RUNTIME_GONE_NETWORK", "pstgone"),
		"PODSTEP_REGISTRY_PORT="+envOr("PODSTEP_RUNTIME_GONE_PORT", "5078"), "PODSTEP_BIN="+e.bin)
	h.endpoint = "unix://" + h.dir + "/run/containerd.sock"
	t.Cleanup(func() {
		start := time.Now()
		if out, err := h.script("containerd-down.sh"); err != nil {
			t.Errorf("containerd-down.sh: %v\n%s", err, out)
		}
		t.Logf("second harness down in %s", time.Since(start).Round(time.Millisecond))
	})
	h.up(t, "up")
	return h
}

// envOr is the environment variable key, or def when it is unset or empty.
func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func (h *harness) script(name string) (string, error) {
	cmd := exec.Command("bash", filepath.Join(h.repo, "hack", name))
	cmd.Env = h.env
	cmd.Dir = "/" // containerd keeps the cwd of the script that started it
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// up runs containerd-up.sh: it starts containerd, or restarts one that died.
func (h *harness) up(t *testing.T, what string) {
	t.Helper()
	start := time.Now()
	out, err := h.script("containerd-up.sh")
	if err != nil || !strings.Contains(out, "CONTAINER_RUNTIME_ENDPOINT="+h.endpoint) {
		t.Fatalf("containerd-up.sh (%s): %v\n%s", what, err, out)
	}
	t.Logf("second harness %s in %s", what, time.Since(start).Round(time.Millisecond))
}

// kill sends SIGKILL to containerd, as a crash would: its shims, and the
// containers under them, keep running.
func (h *harness) kill(t *testing.T) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(h.dir, "containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 containerd (pid %d): %v", pid, err)
	}
}

// TestRuntimeGone: containerd is killed (SIGKILL; its shims live on) while
// podstep relists a running pod. podstep exits 3 saying "the runtime went
// away during relist" and what is left, and keeps what the still-running
// container uses: the pod dir, its tmpfs volume and the log dir. (Before,
// the SIGPIPE of a write to the dead socket was taken for Ctrl-C: exit 130,
// "interrupted: torn down", and the dirs and tmpfs removed under the running
// container.) Once containerd is back, `podstep cleanup` removes it all.
func TestRuntimeGone(t *testing.T) {
	e := setup(t)
	h := ownHarness(t, e)
	g := *e
	g.endpoint = h.endpoint
	d := newDirs(t)

	var killed time.Time
	r := g.stream(t, d, g.local("start-interrupt"), []string{"--settle", "60s"}, func(_ *exec.Cmd, s stepEvent) {
		if s.Name == "start/app" && killed.IsZero() {
			time.Sleep(300 * time.Millisecond) // the relist step polls ListContainers
			h.kill(t)
			killed = time.Now()
		}
	})
	if killed.IsZero() {
		t.Fatalf("the JSON stream never showed step start/app; containerd not killed\n%s", r)
	}
	t.Logf("exit %d %s after containerd was killed", r.code, time.Since(killed).Round(time.Millisecond))
	g.checkStream(t, r)
	if r.code != 3 {
		t.Errorf("exit %d, want 3 (the runtime went away)\n%s", r.code, r)
	}
	if f := r.summary.Failure; f == nil || f.Step != "relist" || f.Reason != "RuntimeUnavailable" {
		t.Errorf("summary.failure = %+v, want step relist, reason RuntimeUnavailable", f)
	}
	uid := r.summary.UID
	podDir, logDir := d.podDir(uid), d.podLogDir("default", "start-interrupt", uid)
	tmpfs := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "scratch")
	for _, want := range []string{"podstep: the runtime went away during relist: ListContainers: ", "; left: sandbox ",
		", container app ", ", dir " + podDir, ", dir " + logDir, ", mount " + tmpfs + " (tmpfs)",
		"once the runtime is back, run `podstep cleanup`"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "torn down") || strings.Contains(r.stderr, "interrupted") {
		t.Errorf("stderr takes the runtime's death for an interrupt:\n%s", r.stderr)
	}
	if r.summary.Leftover == nil || len(r.summary.Leftover.Mounts) != 1 {
		t.Errorf("summary.leftover = %+v, want the sandbox, container, dirs and the tmpfs", r.summary.Leftover)
	}
	for _, p := range []string{filepath.Join(podDir, "etc-hosts"), tmpfs, filepath.Join(logDir, "app", "0.log")} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed while the container runs: %v", p, err)
		}
	}
	if ms := testenv.MountsUnder(d.root); len(ms) != 1 || ms[0] != tmpfs {
		t.Errorf("mounts under the root dir: %v, want the tmpfs %s kept", ms, tmpfs)
	}

	h.up(t, "restarted after the kill")
	c := dialCRI(t, h.endpoint)
	c.running(t, uid, "app") // the shim kept it running: the kept dirs were in use
	cl := g.podstep(t, "cleanup", "-r", h.endpoint, "--grace-period", "0")
	if cl.code != 0 {
		t.Errorf("podstep cleanup after the restart: exit %d\n%s", cl.code, cl)
	}
	g.assertNothingLeft(t, d, "default", "start-interrupt", uid)
}

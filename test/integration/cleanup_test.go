//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCleanupKeepsUnrecordedDirs: sandboxes with podstep's label whose
// annotations point `podstep cleanup` at directories podstep never made (no
// .podstep-made marker; a pod uid that climbs out of the root) are removed
// from the runtime, but the directories stay, are listed, and cleanup exits
// 4. A pod podstep kept is cleaned completely in the same run.
func TestCleanupKeepsUnrecordedDirs(t *testing.T) {
	e := setup(t)
	d := newDirs(t)
	kept := e.mustRun(t, d, e.pod("hello"), "--keep")

	base := t.TempDir()
	root := filepath.Join(base, "root")
	victim := filepath.Join(root, "pods", "victim-uid")
	victimLogs := filepath.Join(base, "logs", "default_victim_victim-uid")
	target := filepath.Join(base, "target")
	for _, dir := range []string{victim, victimLogs, target} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "precious"), []byte("not podstep's"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := dialCRI(t, e.endpoint)
	for _, sb := range []struct{ name, uid, logs string }{
		{"victim", "victim-uid", victimLogs},
		{"climber", "../../target", filepath.Join(base, "logs", "..", "target")},
	} {
		_, err := c.rt.RunPodSandbox(ctx10(t), &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata:    &runtimeapi.PodSandboxMetadata{Name: sb.name, Namespace: "default", Uid: sb.uid},
			Hostname:    sb.name,
			Labels:      map[string]string{managedLabel: "true"},
			Annotations: map[string]string{"podstep.dev/root-dir": root, "podstep.dev/log-dir": sb.logs},
			Linux:       &runtimeapi.LinuxPodSandboxConfig{},
		}})
		if err != nil {
			t.Fatalf("RunPodSandbox %s: %v", sb.name, err)
		}
	}

	r := e.podstep(t, "cleanup", "-r", e.endpoint, "--grace-period", "0")
	if r.code != 4 {
		t.Errorf("cleanup: exit %d, want 4 (directories kept)\n%s", r.code, r)
	}
	for _, want := range []string{
		"kept: " + victim + " holds no .podstep-made marker",
		"kept: " + victimLogs + " holds no .podstep-made marker",
		`kept: pod uid "../../target" cannot name a directory under ` + root,
		"cleanup: 2 of 3 pods not fully removed",
	} {
		if !strings.Contains(r.stdout+r.stderr, want) {
			t.Errorf("cleanup output lacks %q\n%s", want, r)
		}
	}
	for _, dir := range []string{victim, victimLogs, target} {
		if _, err := os.Stat(filepath.Join(dir, "precious")); err != nil {
			t.Errorf("cleanup removed %s, which podstep never made: %v", dir, err)
		}
	}
	e.assertNothingLeft(t, d, "default", "hello", kept.summary.UID)
}

// TestRelativeDirs: a relative --root-dir and --log-dir work from the
// working directory. Passed as given, runc resolved the etc-hosts mount
// source inside the shim's bundle dir and StartContainer failed
// (RunContainerError: error mounting ".../rel/pods/<uid>/etc-hosts").
func TestRelativeDirs(t *testing.T) {
	e := setup(t)
	cwd := t.TempDir()
	args := []string{"run", "--auto", "-o", "json", "-f", e.pod("hello"), "-r", e.endpoint, "--grace-period", "0",
		"--root-dir", "rel-root", "--log-dir", "rel-logs", "--keep"}
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = cwd
	out, err := cmd.Output()
	r := &result{args: args, stdout: string(out)}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code, r.stderr = ee.ExitCode(), string(ee.Stderr)
	} else if err != nil {
		t.Fatal(err)
	}
	r.parseJSON(t)
	e.checkStream(t, r)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.code, r)
	}
	d := dirs{root: filepath.Join(cwd, "rel-root"), logs: filepath.Join(cwd, "rel-logs")}
	if _, err := os.Stat(filepath.Join(d.podDir(r.summary.UID), "etc-hosts")); err != nil {
		t.Errorf("pod dir not under the working directory: %v", err)
	}
	// cleanup runs from elsewhere and finds the dirs by their absolute paths.
	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "hello", r.summary.UID)
}

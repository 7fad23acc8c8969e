//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// localDeviceManifest is a pod (fsGroup 2000) whose claim is bound to a
// local PersistentVolume on the block device DEVICE (no fsType: ext4).
const localDeviceManifest = `apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-disk}
spec:
  capacity: {storage: 32Mi}
  accessModes: [ReadWriteOnce]
  claimRef: {namespace: default, name: disk, uid: 5a0c1f6e-2222-4b1c-8d3e-000000000002}
  local: {path: DEVICE}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: Exists}]}]}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: disk, uid: 5a0c1f6e-2222-4b1c-8d3e-000000000002}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 32Mi}}, volumeName: pv-disk}
status: {phase: Bound}
---
apiVersion: v1
kind: Pod
metadata: {name: local-disk}
spec:
  securityContext: {fsGroup: 2000}
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: [sh, -c, SCRIPT]
    volumeMounts: [{name: disk, mountPath: /data}]
  volumes:
  - {name: disk, persistentVolumeClaim: {claimName: disk}}
`

// TestLocalBlockDeviceVolume: a local PersistentVolume on a block device
// (a loop device) on the real runtime, as the kubelet's local volume
// plugin makes it: formatted (ext4) because it has no file system, mounted
// at ROOT/plugins/kubernetes.io/local-volume/mounts/pv-disk, bind-mounted
// into the pod, group fsGroup. `podstep cleanup` of a kept pod unmounts
// the device too; a second run finds the first one's file (no format) and
// its own teardown unmounts the device (UnmountDevice). Nothing is left.
func TestLocalBlockDeviceVolume(t *testing.T) {
	e := setup(t)
	img := filepath.Join(t.TempDir(), "disk.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 32<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "--detach", dev).Run() })
	manifest := func(script string) string {
		p := filepath.Join(t.TempDir(), "local-disk.yaml")
		m := strings.ReplaceAll(strings.ReplaceAll(localDeviceManifest, "DEVICE", dev), "SCRIPT", `'`+script+`'`)
		if err := os.WriteFile(p, []byte(m), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	d := newDirs(t)
	global := filepath.Join(d.root, "plugins", "kubernetes.io", "local-volume", "mounts", "pv-disk")

	// 1. kept: look inside, then podstep cleanup.
	r := e.mustRun(t, d, manifest("echo kept > /data/f; sleep 3600"), "--keep")
	volumes := mustStep(t, r, "volumes")
	for _, want := range []string{"had no file system: formatted as ext4 (mkfs.ext4 -F -m0 " + dev + ")", "mounted " + dev + " at " + global} {
		if !strings.Contains(stepText(volumes), want) {
			t.Errorf("the volumes step does not say %q:\n%s", want, stepText(volumes))
		}
	}
	c := dialCRI(t, e.endpoint)
	app := c.running(t, r.summary.UID, "app")
	sh := func(script string) string { return strings.TrimSpace(c.exec(t, app.Id, "sh", "-c", script)) }
	if got := sh(`awk '$2 == "/data" {print $3}' /proc/mounts`); got != "ext4" {
		t.Errorf("/data in the container is %q, want ext4", got)
	}
	if got := sh("stat -c %g /data"); got != "2000" {
		t.Errorf("/data has group %s, want the fsGroup 2000", got)
	}
	if got := mountFSType(global); got != "ext4" {
		t.Errorf("%s on the host: mounted %q, want ext4", global, got)
	}
	e.cleanup(t)
	e.assertNothingLeft(t, d, "default", "local-disk", r.summary.UID)
	if _, err := os.Stat(global); !os.IsNotExist(err) {
		t.Errorf("podstep cleanup left %s: %v", global, err)
	}

	// 2. a whole run: the file system and the file are there; teardown unmounts.
	r = e.mustRun(t, d, manifest("test \"$(cat /data/f)\" = kept && touch /data/second; sleep 3600"))
	if v := stepText(mustStep(t, r, "volumes")); strings.Contains(v, "formatted") || !strings.Contains(v, "mounted "+dev) {
		t.Errorf("second run: the volumes step should mount %s without formatting it:\n%s", dev, v)
	}
	if !strings.Contains(r.stdout, "local volume UnmountDevice") {
		t.Errorf("the teardown does not say it unmounted the device\n%s", r)
	}
	if _, err := os.Stat(global); !os.IsNotExist(err) {
		t.Errorf("the teardown left %s: %v", global, err)
	}
	e.assertNothingLeft(t, d, "default", "local-disk", r.summary.UID)
	check := t.TempDir()
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "ro", dev, check).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v: %s", dev, err, out)
	}
	defer func() { _ = exec.Command("umount", check).Run() }()
	for _, f := range []string{"f", "second"} {
		if _, err := os.Stat(filepath.Join(check, f)); err != nil {
			t.Errorf("%s on the device: %v", f, err)
		}
	}
}

// mustStep is the run's step of this name; the test fails without it.
func mustStep(t *testing.T, r *result, name string) *stepEvent {
	t.Helper()
	s := r.step(name)
	if s == nil {
		t.Fatalf("no step %q\n%s", name, r)
	}
	return s
}

// stepText is a step's summary, details and warnings, a line each.
func stepText(s *stepEvent) string {
	lines := []string{s.Summary}
	for _, d := range s.Details {
		lines = append(lines, d.Key+": "+d.Value)
	}
	return strings.Join(append(lines, s.Warnings...), "\n")
}

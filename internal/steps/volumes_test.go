package steps

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/volume"
)

const volumesPod = `
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {app.conf: "greeting = hi\n", other: x}
---
apiVersion: v1
kind: Secret
metadata: {name: creds}
stringData: {password: hunter2}
---
apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels: {app: vols}
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    imagePullPolicy: IfNotPresent
    command: [sh, -c, sleep 3600]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: config, mountPath: /etc/app, readOnly: true}
    - {name: config, mountPath: /etc/app.conf, subPath: app.conf}
    - {name: creds, mountPath: /etc/creds, readOnly: true}
    - {name: podinfo, mountPath: /etc/podinfo}
    - {name: bundle, mountPath: /etc/bundle}
    - {name: host, mountPath: /host, mountPropagation: HostToContainer}
  volumes:
  - {name: scratch, emptyDir: {}}
  - name: config
    configMap:
      name: cfg
      items: [{key: app.conf, path: app.conf, mode: 0600}]
  - {name: creds, secret: {secretName: creds}}
  - name: podinfo
    downwardAPI:
      items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]
  - name: bundle
    projected:
      sources:
      - configMap: {name: cfg}
      - downwardAPI: {items: [{path: name, fieldRef: {fieldPath: metadata.name}}]}
  - name: host
    hostPath: {path: HOSTPATH, type: DirectoryOrCreate}
`

// runWithVolumes runs b through its creation on a simulated runtime, as
// runAll, and fails the test if a step failed. It returns the engine and
// the pod's dir, whose volumes are torn down when the test ends (the
// engine is not: the test looks at what it left).
func runWithVolumes(t *testing.T, b *manifest.Bundle, o Options) (*Engine, string) {
	t.Helper()
	podDir := filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID))
	t.Cleanup(func() {
		if _, err := volume.TeardownPod(podDir); err != nil {
			t.Error(err)
		}
	})
	e := runAll(t, b, newSim(t), o)
	if f, failed := e.Failed(); failed {
		t.Fatalf("step %s failed: %s: %s", f.Name, f.Result.Summary, f.Result.Message)
	}
	return e, podDir
}

// throughVolumes runs b's admit, dirs and volumes steps on a simulated
// runtime, fails the test unless the volumes step is done, and returns the
// engine (torn down when the test ends) and that step.
func throughVolumes(t *testing.T, b *manifest.Bundle, o Options) (*Engine, Step) {
	t.Helper()
	e := New(b, newSim(t), o)
	t.Cleanup(func() { _ = e.Teardown(context.Background()) })
	for i := 0; i < 3; i++ { // admit, dirs, volumes
		if _, err := e.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	vol := e.Steps()[2]
	if vol.Name != "volumes" || vol.State != Done {
		t.Fatalf("step 3: %s %s: %v", vol.Name, vol.State, vol.Result.Err)
	}
	return e, vol
}

// TestVolumesOnSim runs a pod with every volume type on the simulated
// runtime and checks the volumes on disk and the mounts CreateContainer got.
func TestVolumesOnSim(t *testing.T) {
	o := testOptions(t)
	hostPath := filepath.Join(t.TempDir(), "host", "demo")
	b := parse(t, strings.Replace(volumesPod, "HOSTPATH", hostPath, 1))
	e, podDir := runWithVolumes(t, b, o)
	vols := filepath.Join(podDir, "volumes")
	want := map[string]string{
		"/scratch": filepath.Join(vols, "kubernetes.io~empty-dir", "scratch"),
		"/etc/app": filepath.Join(vols, "kubernetes.io~configmap", "config"),
		// A subPath mount is the kubelet's bind mount of the resolved file
		// (makeMounts → PrepareSafeSubpath); without root, the resolved file.
		"/etc/app.conf": filepath.Join(podDir, "volume-subpaths", "config", "app", "2"),
		"/etc/creds":    filepath.Join(vols, "kubernetes.io~secret", "creds"),
		"/etc/podinfo":  filepath.Join(vols, "kubernetes.io~downward-api", "podinfo"),
		"/etc/bundle":   filepath.Join(vols, "kubernetes.io~projected", "bundle"),
		"/host":         hostPath,
	}
	if os.Geteuid() != 0 {
		resolved, err := filepath.EvalSymlinks(filepath.Join(vols, "kubernetes.io~configmap", "config", "app.conf"))
		if err != nil {
			t.Fatal(err)
		}
		want["/etc/app.conf"] = resolved
	}
	req := lastCreateContainer(t, e)
	got := map[string]*runtimeapi.Mount{}
	for _, m := range req.Config.Mounts {
		got[m.ContainerPath] = m
	}
	for cp, hp := range want {
		m := got[cp]
		if m == nil {
			t.Errorf("no mount at %s", cp)
			continue
		}
		if m.HostPath != hp {
			t.Errorf("%s: host path %s, want %s", cp, m.HostPath, hp)
		}
		if _, err := os.Stat(m.HostPath); err != nil {
			t.Errorf("%s: host path missing: %v", cp, err)
		}
		// configMap, secret, downwardAPI and projected volumes are always
		// read-only (the kubelet's mustMountRO); emptyDir and hostPath as asked.
		ro := cp != "/scratch" && cp != "/host"
		if m.Readonly != ro {
			t.Errorf("%s: readonly %v, want %v", cp, m.Readonly, ro)
		}
	}
	if m := got["/host"]; m != nil && m.Propagation != runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER {
		t.Errorf("/host propagation %v", m.Propagation)
	}
	// The subPath mount's host path is the file the atomic writer's
	// symlinks lead to, and the create step says how it was prepared.
	if data, err := os.ReadFile(want["/etc/app.conf"]); err != nil || string(data) != "greeting = hi\n" {
		t.Errorf("subPath file: %q %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(want["/etc/podinfo"], "labels")); err != nil || string(data) != `app="vols"` {
		t.Errorf("downward API labels: %q %v", data, err)
	}
	if data, err := os.ReadFile(filepath.Join(want["/etc/bundle"], "name")); err != nil || string(data) != "vols" {
		t.Errorf("projected name: %q %v", data, err)
	}
	if fi, err := os.Stat(want["/scratch"]); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir: %v %v", fi, err)
	}
	// Details name each volume and its files, never secret contents.
	st := stepNamed(t, e, "volumes")
	var details strings.Builder
	for _, d := range st.Result.Details {
		details.WriteString(d.Key + " = " + d.Value + "\n")
	}
	for _, s := range []string{"config = configMap kubernetes.io/configmap at " + want["/etc/app"], "  config/app.conf = symlink → ..data/app.conf", "creds = secret kubernetes.io/secret", "host = hostPath kubernetes.io/host-path at " + hostPath + ", type DirectoryOrCreate, created"} {
		if !strings.Contains(details.String(), s) {
			t.Errorf("details lack %q:\n%s", s, details.String())
		}
	}
	if strings.Contains(details.String(), "hunter2") {
		t.Error("details show a secret value")
	}

	create := stepNamed(t, e, "create/app")
	var sub string
	for _, d := range create.Result.Details {
		if d.Key == "subPath" {
			sub = d.Value
		}
	}
	wantSub := `volumeMount 2 (config, subPath "app.conf"): opened ` + filepath.Join(vols, "kubernetes.io~configmap", "config") + "/..20"
	if os.Geteuid() != 0 {
		wantSub = `volumeMount 2 (config, subPath "app.conf"): checked `
	}
	if !strings.HasPrefix(sub, wantSub) || !strings.Contains(sub, want["/etc/app.conf"]) {
		t.Errorf("create/app subPath detail %q, want it to start %q and name %s", sub, wantSub, want["/etc/app.conf"])
	}

	// Teardown unmounts the subPath bind mount and the tmpfs volumes
	// (root) so the pod dir goes away.
	if _, err := volume.TeardownPod(podDir); err != nil {
		t.Fatal(err)
	}
	if ms, _ := volume.Mounts(podDir); len(ms) != 0 {
		t.Errorf("still mounted: %+v", ms)
	}
}

// TestVolumesFailure: a volume that cannot be set up fails the step with
// FailedMount, records the kubelet's event, and no volume is made.
func TestVolumesFailure(t *testing.T) {
	cases := []struct {
		name, volumes, want string
	}{
		{"missing configmap", `
  - {name: a, emptyDir: {}}
  - {name: b, configMap: {name: nope}}`, `MountVolume.SetUp failed for volume "b" : configmap "nope" not found`},
		{"missing key", `
  - {name: a, emptyDir: {}}
  - name: b
    secret: {secretName: s, items: [{key: nokey, path: k}]}`, `MountVolume.SetUp failed for volume "b" : references non-existent secret key: nokey`},
		{"pvc", `
  - {name: a, emptyDir: {}}
  - {name: b, persistentVolumeClaim: {claimName: data}}`, `error processing PVC default/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found`},
		{"csi", `
  - {name: a, emptyDir: {}}
  - name: b
    csi: {driver: secrets-store.csi.k8s.io}`, `MountVolume.SetUp failed for volume "b" : kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name secrets-store.csi.k8s.io not found in the list of registered CSI drivers`},
		{"hostPath type", `
  - {name: a, emptyDir: {}}
  - {name: b, hostPath: {path: /dev/null, type: Directory}}`, `MountVolume.SetUp failed for volume "b" : hostPath type check failed: /dev/null is not a directory, it's a CharDevice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := `
apiVersion: v1
kind: Secret
metadata: {name: s}
stringData: {k: v}
---
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - {name: app, image: docker.io/library/busybox:1.35, volumeMounts: [{name: b, mountPath: /b}]}
  volumes:` + c.volumes + "\n"
			o := testOptions(t)
			b := parse(t, y)
			e := runAll(t, b, newSim(t), o)
			f, failed := e.Failed()
			if !failed || f.Name != "volumes" {
				t.Fatalf("failed step %+v, want volumes", f)
			}
			if f.Result.Reason != reason.FailedMountVolume || !strings.Contains(f.Result.Message, c.want) {
				t.Errorf("reason %q message %q, want FailedMount %q", f.Result.Reason, f.Result.Message, c.want)
			}
			if !strings.HasPrefix(f.Result.Summary, "unmounted volumes=[b]") {
				t.Errorf("summary %q", f.Result.Summary)
			}
			if c.name == "pvc" || c.name == "csi" {
				hint := ""
				for _, d := range f.Result.Details {
					if d.Key == "to go on" {
						hint = d.Value
					}
				}
				if hint == "" {
					t.Errorf("no way forward in the details: %+v", f.Result.Details)
				}
			}
			found := false
			for _, ev := range e.PodState().Events {
				if ev.Reason == reason.FailedMountVolume && ev.Type == corev1.EventTypeWarning && strings.Contains(ev.Message, c.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("no FailedMount event with %q: %+v", c.want, e.PodState().Events)
			}
			vols := filepath.Join(o.Config.RootDir, "pods", string(b.Pod.UID), "volumes")
			if ents, _ := os.ReadDir(vols); len(ents) != 0 {
				t.Errorf("volumes made despite the failure: %v", ents)
			}
		})
	}
}

func stepNamed(t *testing.T, e *Engine, name string) Step {
	t.Helper()
	for _, s := range e.Steps() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no step %q", name)
	return Step{}
}

//go:build cluster

// Persistent and CSI volumes on the test cluster (issue 31, item 6): the
// real kubelet runs a pod whose volume comes from local-path-provisioner
// (the cluster's default StorageClass) or from the mock CSI driver that
// hack/cluster-up.sh serves on each node, then `podstep run --pod` replays
// that pod on the replay runtime of the node's containerd version and
// mounts the same volume: the provisioned directory, or the node's
// registered mock driver called as the kubelet calls it. The CSI tests then
// diff the kubelet's CSI calls, recorded by the podstep proxy that
// cluster-up.sh stands in front of each node's mock (--csi), with podstep's.
//
// Each test runs once per node (containerd 1.6, containerd 2), one after
// the other. Environment (hack/test.sh's cluster phase, from cluster-up.sh's
// output): the package's (helpers_test.go), and per node N (16, 2)
//
//	PODSTEP_REPLAY_ENDPOINT_N      the replay runtime of the node's containerd version (a harness
//	                               no kubelet watches)
//	PODSTEP_CSI_ENDPOINT_N         the node's mock CSI driver socket (its controller service
//	                               makes the volumes of CSI PersistentVolumes: CreateVolume)
//	PODSTEP_CSI_REGISTRY_N         the node's kubelet's plugins_registry (where the mock registered)
//	PODSTEP_RECORD_DIR_N           the --record-dir of the node's proxy (cluster-up.sh's RECORD_DIR_N)
//
// CI=true turns every missing variable into a failure.
package cluster

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podstep/podstep/test/internal/testenv"
)

const (
	// storageClass is the default StorageClass cluster-up.sh makes (local-path-provisioner's).
	storageClass = "local-path"
	// csiDriver is the mock CSI driver's name on every node (the e2e mock's own).
	csiDriver = "io.kubernetes.storage.mock"
)

// storageEnv is one node of the cluster, its replay runtime and its mock CSI driver.
type storageEnv struct {
	c      *Cluster
	node   Node
	bin    string
	replay string // the replay runtime's CRI endpoint
	// csiEndpoint and csiRegistry: the node's mock driver socket and its kubelet's
	// plugins_registry ("" unless the test needs the mock).
	csiEndpoint, csiRegistry string
	// recDir is the node's proxy's --record-dir, where the kubelet's CSI
	// calls are recorded with each pod ("" unless the test needs the mock).
	recDir string
}

// storageRuntimes are the nodes' runtimes, each test's subtests.
var storageRuntimes = []string{"1.6", "2"}

// storageSetup is the cluster's node of runtime rt ("1.6" or "2") with its
// replay runtime, and with its mock CSI driver when withCSI.
func storageSetup(t *testing.T, rt string, withCSI bool) *storageEnv {
	t.Helper()
	c := newCluster(t)
	n := strings.ReplaceAll(rt, ".", "")
	get := func(k string, missing *[]string) string {
		v := os.Getenv(k)
		if v == "" {
			*missing = append(*missing, k)
		}
		return v
	}
	var missing []string
	e := &storageEnv{c: c, node: c.Node(rt), bin: get("PODSTEP_BIN", &missing), replay: get("PODSTEP_REPLAY_ENDPOINT_"+n, &missing)}
	if withCSI {
		e.csiEndpoint, e.csiRegistry = get("PODSTEP_CSI_ENDPOINT_"+n, &missing), get("PODSTEP_CSI_REGISTRY_"+n, &missing)
		e.recDir = get("PODSTEP_RECORD_DIR_"+n, &missing)
	}
	if len(missing) > 0 {
		notRun(t, strings.Join(missing, ", ")+" not set")
	}
	return e
}

// replayPod runs `podstep run --pod NS/NAME` of the cluster's pod on the
// replay runtime, with a root dir of its own, recording to DIR/podstep.rec.gz;
// it fails the test unless podstep exits 0, and returns podstep's steps, that
// root dir and the recording. Teardown is podstep's own (run --auto ends with it).
func (e *storageEnv) replayPod(t *testing.T, ns, name string, extra ...string) (steps []storageStep, root, recording string) {
	t.Helper()
	dir := t.TempDir()
	root, recording = filepath.Join(dir, "root"), filepath.Join(dir, "podstep.rec.gz")
	args := append([]string{"run", "--auto", "-o", "json", "--pod", ns + "/" + name, "--kubeconfig", e.c.Kubeconfig,
		"-r", e.replay, "--root-dir", root, "--log-dir", filepath.Join(dir, "logs"), "--record", recording,
		"--settle", "3s", "--grace-period", "0"}, extra...)
	r := e.c.runPodstep(t, 3*time.Minute, args...)
	if r.exit != 0 {
		t.Fatalf("podstep %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.exit, r.stdout, r.stderr)
	}
	steps, err := parseStorageSteps(r.stdout)
	if err != nil {
		t.Fatalf("podstep run -o json: %v\n%s", err, r.stdout)
	}
	for _, m := range testenv.MountsUnder(dir) {
		t.Errorf("left mounted after podstep's teardown: %s", m)
	}
	if _, err := os.Stat(recording); err != nil {
		t.Errorf("podstep run --record: %v", err)
	}
	return steps, root, recording
}

// storageStep is what these tests read of one -o json step line.
type storageStep struct {
	Type  string `json:"type"`
	Name  string `json:"name"`
	State string `json:"state"`
	Calls []struct {
		Method  string          `json:"method"`
		Request json.RawMessage `json:"request"`
		Error   string          `json:"error"`
	} `json:"calls"`
}

func parseStorageSteps(out string) ([]storageStep, error) {
	var steps []storageStep
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var s storageStep
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			return nil, fmt.Errorf("line %q: %w", line, err)
		}
		if s.Type == "step" {
			steps = append(steps, s)
		}
	}
	return steps, sc.Err()
}

// csiCalls are the CSI methods of the steps, in order: the volumes step's
// (setup) and the ones of every later step that calls a CSI driver (teardown).
func csiCalls(steps []storageStep) (setup, teardown []string) {
	for _, s := range steps {
		var ms []string
		for _, c := range s.Calls {
			if strings.HasPrefix(c.Method, "Node") {
				ms = append(ms, c.Method)
			}
		}
		switch {
		case s.Name == "volumes":
			setup = append(setup, ms...)
		case len(ms) > 0:
			teardown = append(teardown, ms...)
		}
	}
	return setup, teardown
}

// needStorageClass fails the test unless the cluster has local-path-provisioner's
// StorageClass as its default one.
func (e *storageEnv) needStorageClass(t *testing.T) {
	t.Helper()
	sc, err := e.c.Client.StorageV1().StorageClasses().Get(ctx(t), storageClass, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("StorageClass %s: %v (hack/cluster-up.sh makes it and starts local-path-provisioner: is this cluster from an older cluster-up.sh?)", storageClass, err)
	}
	if sc.Annotations["storageclass.kubernetes.io/is-default-class"] != "true" || sc.Provisioner != "rancher.io/local-path" ||
		sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Fatalf("StorageClass %s: want the default class of provisioner rancher.io/local-path, WaitForFirstConsumer (as kind ships it), got annotations %v, provisioner %s, binding mode %v",
			storageClass, sc.Annotations, sc.Provisioner, ptr.Deref(sc.VolumeBindingMode, ""))
	}
}

// needCSIDriver fails the test unless the mock's CSIDriver object is there and
// the node's kubelet registered the mock (its CSINode lists it).
func (e *storageEnv) needCSIDriver(t *testing.T) {
	t.Helper()
	d, err := e.c.Client.StorageV1().CSIDrivers().Get(ctx(t), csiDriver, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("CSIDriver %s: %v (hack/cluster-up.sh makes it and serves the mock CSI driver on each node)", csiDriver, err)
	}
	if ptr.Deref(d.Spec.AttachRequired, true) || !ptr.Deref(d.Spec.PodInfoOnMount, false) ||
		!slices.Contains(d.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral) {
		t.Fatalf("CSIDriver %s: want attachRequired false, podInfoOnMount true, Ephemeral among its modes; got %+v", csiDriver, d.Spec)
	}
	waitFor(t, 30*time.Second, "CSINode "+e.node.Name+" listing "+csiDriver+" (the kubelet's plugin registration)", func(ctx context.Context) (bool, error) {
		n, err := e.c.Client.StorageV1().CSINodes().Get(ctx, e.node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range n.Spec.Drivers {
			if d.Name == csiDriver {
				return true, nil
			}
		}
		return false, fmt.Errorf("drivers: %v", n.Spec.Drivers)
	})
}

// TestStorageLocalPathStatefulSet: a StatefulSet's pod with a claim from its
// volumeClaimTemplate and no storageClassName (the default class,
// local-path): the provisioner's helper pod makes a directory, the claim
// binds to a hostPath PV of that directory, the real kubelet runs the pod,
// which writes a file there. podstep run --pod of that pod on the replay
// runtime mounts the same directory: its container (the same script) finds
// the file and copies it, and the copy appears in the PV's directory.
func TestStorageLocalPathStatefulSet(t *testing.T) {
	for _, rt := range storageRuntimes {
		t.Run("containerd-"+rt, func(t *testing.T) { testLocalPathStatefulSet(t, storageSetup(t, rt, false)) })
	}
}

func testLocalPathStatefulSet(t *testing.T, e *storageEnv) {
	e.needStorageClass(t)
	ns := e.c.newNamespace(t, "lpath")
	// The first run of the script writes a token; a later run (podstep's
	// replay) finds it and copies it to a file named by its own run.
	script := `if [ -f /data/first ]; then cp /data/first /data/seen-by-replay; else cat /proc/sys/kernel/random/uuid > /data/first; fi`
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To[int32](1),
			ServiceName: "web",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](0),
					Containers:                    []corev1.Container{sleeper("app", script)},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("16Mi")}},
				},
			}},
		},
	}
	sts.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	onNode(&sts.Spec.Template.Spec, e.node)
	if _, err := e.c.Client.AppsV1().StatefulSets(ns).Create(ctx(t), sts, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create StatefulSet: %v", err)
	}
	pod := e.c.waitForPodRunning(t, ns, "web-0")
	claim, err := e.c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx(t), "data-web-0", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the StatefulSet's claim: %v", err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" || ptr.Deref(claim.Spec.StorageClassName, "") != storageClass {
		t.Fatalf("claim data-web-0: want Bound to a PV of class %s, got phase %s, volume %q, class %q",
			storageClass, claim.Status.Phase, claim.Spec.VolumeName, ptr.Deref(claim.Spec.StorageClassName, ""))
	}
	pv, err := e.c.Client.CoreV1().PersistentVolumes().Get(ctx(t), claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PV %s: %v", claim.Spec.VolumeName, err)
	}
	var dir string
	switch {
	case pv.Spec.HostPath != nil:
		dir = pv.Spec.HostPath.Path
	case pv.Spec.Local != nil:
		dir = pv.Spec.Local.Path
	default:
		t.Fatalf("PV %s: want a hostPath or local volume from local-path-provisioner, got %+v", pv.Name, pv.Spec.PersistentVolumeSource)
	}
	t.Logf("pod %s/%s on %s: claim data-web-0 bound to %s (%s)", ns, pod.Name, pod.Spec.NodeName, pv.Name, dir)
	first, err := os.ReadFile(filepath.Join(dir, "first"))
	if err != nil {
		t.Fatalf("the real pod's file in the provisioned directory: %v", err)
	}

	steps, _, _ := e.replayPod(t, ns, pod.Name)
	seen, err := os.ReadFile(filepath.Join(dir, "seen-by-replay"))
	if err != nil {
		t.Fatalf("podstep's replay of %s/%s did not write into the PV's directory %s (did it mount it?): %v\nsteps: %+v", ns, pod.Name, dir, err, steps)
	}
	if string(seen) != string(first) {
		t.Errorf("the replayed container saw %q in /data/first, the real pod wrote %q", seen, first)
	}
}

// createMockVolume makes a volume through the node's mock CSI driver's
// controller service, as an external-provisioner would (none runs here), and
// returns its handle: the mock keeps volumes in memory, and its
// NodeStageVolume knows no other.
func (e *storageEnv) createMockVolume(t *testing.T, name string) string {
	t.Helper()
	conn, err := grpc.NewClient(e.csiEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial the mock CSI driver at %s: %v", e.csiEndpoint, err)
	}
	defer conn.Close()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := csipb.NewControllerClient(conn).CreateVolume(c, &csipb.CreateVolumeRequest{
		Name: name,
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	})
	if err != nil {
		t.Fatalf("CreateVolume %s on the mock CSI driver at %s: %v", name, e.csiEndpoint, err)
	}
	return resp.GetVolume().GetVolumeId()
}

// kubeletRoot is the node's kubelet root dir (its plugins_registry's parent).
func (e *storageEnv) kubeletRoot() string { return filepath.Dir(e.csiRegistry) }

// csiMethods are the CSI node service's calls a kubelet makes.
var csiMethods = map[string]bool{
	"NodeGetCapabilities": true, "NodeGetInfo": true, "NodeStageVolume": true, "NodeUnstageVolume": true,
	"NodePublishVolume": true, "NodeUnpublishVolume": true, "NodeGetVolumeStats": true, "NodeExpandVolume": true,
}

// csiDiff is the part of `podstep diff -o json` compareWithKubeletCSICalls reads.
type csiDiff struct {
	Calls []struct {
		Op     string `json:"op"`
		Method string `json:"method"`
		StepA  string `json:"step_a"`
		StepB  string `json:"step_b"`
		CountA int    `json:"count_a"`
		CountB int    `json:"count_b"`
		CodeA  string `json:"code_a"`
		CodeB  string `json:"code_b"`
		Fields []struct {
			Path string `json:"path"`
			A    string `json:"a"`
			B    string `json:"b"`
		} `json:"fields"`
	} `json:"calls"`
	Counts struct {
		Same   int `json:"same"`
		Differ int `json:"differ"`
		OnlyA  int `json:"only_a"`
		OnlyB  int `json:"only_b"`
	} `json:"counts"`
}

// compareWithKubeletCSICalls compares podstep's CSI calls (mine: the
// recording of replayPod) with the real kubelet's, as the `podstep proxy
// --csi` in front of the node's mock driver recorded them with the pod
// (hack/cluster-up.sh): it deletes the real pod (the kubelet unpublishes and
// unstages), waits for the proxy's recording of it (written once the
// kubelet removed the pod's sandbox) and runs `podstep diff -o json`. Every
// CSI entry must be the same call ("=") the same number of times in a row,
// and the kubelet's CSI calls, in order, must be want: the kubelet reached
// the driver through the proxy for each of them. podstep diff's own
// normalisations are the only ones: the pod's UID (the kubelet's pod vs
// podstep's ReplayUID, in the target paths and the pod-info keys), the root
// dir (the kubelet's --root-dir vs podstep's) and 64-hex IDs (the staging
// path's sha256 of the handle and an inline volume's handle, csi-sha256(UID
// + name)). The CRI entries are TestFidelity's to judge: only counted here.
// Listed in docs/kubelet.md, not a failure: where the kubelet's unpublish
// falls among its CRI teardown calls (its volume manager's reconciler
// unpublishes once the containers stopped, racing its container deletor's
// RemoveContainer; podstep after RemovePodSandbox): podstep diff aligns the
// CSI calls among themselves, and compares their requests all the same.
// podstep's replay reaches the mock through the registration too, so
// through the same proxy: its calls are another pod's there (ReplayUID).
func (e *storageEnv) compareWithKubeletCSICalls(t *testing.T, real *corev1.Pod, mine string, want []string) {
	t.Helper()
	ns := real.Namespace
	if err := e.c.Client.CoreV1().Pods(ns).Delete(ctx(t), real.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	theirs := filepath.Join(e.recDir, fmt.Sprintf("%s_%s_%s.rec.gz", ns, real.Name, real.UID))
	waitFor(t, 3*time.Minute, "the proxy's recording "+theirs, func(context.Context) (bool, error) {
		_, err := os.Stat(theirs)
		return err == nil, err
	})
	t.Cleanup(func() {
		if !t.Failed() {
			_ = os.Remove(theirs)
			return
		}
		keep := filepath.Join(filepath.Dir(theirs), ns+"_"+real.Name+".podstep.rec.gz")
		if b, err := os.ReadFile(mine); err == nil && os.WriteFile(keep, b, 0o600) == nil {
			t.Logf("kept: podstep diff %s %s", theirs, keep)
		}
	})
	d := e.c.runPodstep(t, time.Minute, "diff", "-o", "json", "--different-pods", theirs, mine)
	if d.exit != 0 && d.exit != 1 {
		t.Fatalf("podstep diff: exit %d\n%s", d.exit, d.stderr)
	}
	var res csiDiff
	if err := json.Unmarshal([]byte(d.stdout), &res); err != nil {
		t.Fatalf("podstep diff -o json: %v\n%s", err, d.stdout)
	}
	var kubelet, podstep, problems []string
	for _, c := range res.Calls {
		if !csiMethods[c.Method] {
			continue
		}
		for range c.CountA {
			kubelet = append(kubelet, c.Method)
		}
		for range c.CountB {
			podstep = append(podstep, c.Method)
		}
		switch {
		case c.Op == "-":
			problems = append(problems, fmt.Sprintf("%s ×%d (step %q): the kubelet's only", c.Method, c.CountA, c.StepA))
		case c.Op == "+":
			problems = append(problems, fmt.Sprintf("%s ×%d (step %q): podstep's only", c.Method, c.CountB, c.StepB))
		case c.Op == "~" && c.CodeA != c.CodeB:
			problems = append(problems, fmt.Sprintf("%s: gRPC code %q (kubelet) / %q (podstep)", c.Method, c.CodeA, c.CodeB))
		case c.CountA != c.CountB:
			problems = append(problems, fmt.Sprintf("%s: ×%d in a row (kubelet, step %q) / ×%d (podstep, step %q)", c.Method, c.CountA, c.StepA, c.CountB, c.StepB))
		}
		for _, f := range c.Fields {
			problems = append(problems, fmt.Sprintf("%s %s: kubelet %s, podstep %s", c.Method, f.Path, orAbsent(json.RawMessage(f.A)), orAbsent(json.RawMessage(f.B))))
		}
	}
	t.Logf("podstep diff %s %s: %d same, %d differ, %d kubelet only, %d podstep only (CRI and CSI); the kubelet's CSI calls: %v; podstep's: %v",
		filepath.Base(theirs), filepath.Base(mine), res.Counts.Same, res.Counts.Differ, res.Counts.OnlyA, res.Counts.OnlyB, kubelet, podstep)
	if !slices.Equal(kubelet, want) {
		t.Errorf("the kubelet's CSI calls in the proxy's recording:\n got %v\nwant %v (did the kubelet reach the mock driver through the proxy?)", kubelet, want)
	}
	if len(problems) > 0 {
		t.Errorf("the kubelet's and podstep's CSI calls differ (podstep diff %s %s):\n  %s", theirs, mine, strings.Join(problems, "\n  "))
	}
}

// TestStorageCSIInlineVolume: a pod with an inline CSI volume of the mock
// driver runs on the real kubelet (the mock publishes it under the kubelet's
// pods dir), and podstep run --pod replays it against the node's registered
// mock (found in the kubelet's plugins_registry): NodePublishVolume with the
// pod-info keys after the kubelet's capability calls, NodeUnpublishVolume at
// teardown, no NodeStageVolume (inline volumes are never staged).
func TestStorageCSIInlineVolume(t *testing.T) {
	for _, rt := range storageRuntimes {
		t.Run("containerd-"+rt, func(t *testing.T) { testCSIInlineVolume(t, storageSetup(t, rt, true)) })
	}
}

func testCSIInlineVolume(t *testing.T, e *storageEnv) {
	e.needCSIDriver(t)
	ns := e.c.newNamespace(t, "csiinl")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "inline", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{sleeper("app", "")},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
				Driver: csiDriver, VolumeAttributes: map[string]string{"color": "blue"},
			}}}},
		},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	onNode(&pod.Spec, e.node)
	if _, err := e.c.Client.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	real := e.c.waitForPodRunning(t, ns, pod.Name)
	target := filepath.Join(e.kubeletRoot(), "pods", string(real.UID), "volumes", "kubernetes.io~csi", "scratch", "mount")
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the kubelet's publish target of the inline volume: %v", err)
	}

	ngc := "NodeGetCapabilities"
	steps, root, mine := e.replayPod(t, ns, pod.Name, "--csi-registry", e.csiRegistry)
	setup, teardown := csiCalls(steps)
	wantSetup, wantTeardown := []string{ngc, ngc, "NodePublishVolume"}, []string{"NodeUnpublishVolume"}
	if !slices.Equal(setup, wantSetup) {
		t.Errorf("podstep's CSI calls setting up the inline volume:\n got %v\nwant %v (csiMountMgr.SetUpAt)", setup, wantSetup)
	}
	if !slices.Equal(teardown, wantTeardown) {
		t.Errorf("podstep's CSI calls at teardown:\n got %v\nwant %v", teardown, wantTeardown)
	}
	assertPublished(t, steps, filepath.Join(root, "pods"), true)
	e.compareWithKubeletCSICalls(t, real, mine, append(wantSetup, wantTeardown...))
}

// TestStorageCSIPersistentVolume: a claim bound to a CSI PV whose volume the
// node's mock made (CreateVolume); the real kubelet stages it (NodeStageVolume
// to its plugins/kubernetes.io/csi/DRIVER/sha256(handle)/globalmount) and
// publishes it, the pod runs; podstep run --pod replays it against the
// node's registered mock: stage and publish in the kubelet's order under its
// own root dir, unpublish and unstage at teardown.
func TestStorageCSIPersistentVolume(t *testing.T) {
	for _, rt := range storageRuntimes {
		t.Run("containerd-"+rt, func(t *testing.T) { testCSIPersistentVolume(t, storageSetup(t, rt, true)) })
	}
}

func testCSIPersistentVolume(t *testing.T, e *storageEnv) {
	e.needCSIDriver(t)
	ns := e.c.newNamespace(t, "csipv")
	handle := e.createMockVolume(t, "podstep-"+ns)
	pvName := "pv-" + ns
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Namespace: ns, Name: "data"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: csiDriver, VolumeHandle: handle,
			}},
		},
	}
	if _, err := e.c.Client.CoreV1().PersistentVolumes().Create(ctx(t), pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PV: %v", err)
	}
	t.Cleanup(func() {
		_ = e.c.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pvName, metav1.DeleteOptions{})
	})
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(""),
			VolumeName:       pvName,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := e.c.Client.CoreV1().PersistentVolumeClaims(ns).Create(ctx(t), claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create claim: %v", err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "csipv", Namespace: ns},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers:                    []corev1.Container{sleeper("app", "")},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
			}}},
		},
	}
	pod.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	onNode(&pod.Spec, e.node)
	if _, err := e.c.Client.CoreV1().Pods(ns).Create(ctx(t), pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	real := e.c.waitForPodRunning(t, ns, pod.Name)
	staging := filepath.Join(e.kubeletRoot(), "plugins", "kubernetes.io", "csi", csiDriver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))), "globalmount")
	target := filepath.Join(e.kubeletRoot(), "pods", string(real.UID), "volumes", "kubernetes.io~csi", pvName, "mount")
	for what, p := range map[string]string{"staging path (NodeStageVolume)": staging, "publish target (NodePublishVolume)": target} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the kubelet's %s: %v", what, err)
		}
	}

	ngc := "NodeGetCapabilities"
	steps, root, mine := e.replayPod(t, ns, pod.Name, "--csi-registry", e.csiRegistry)
	setup, teardown := csiCalls(steps)
	wantSetup := []string{ngc, ngc, ngc, "NodeStageVolume", ngc, ngc, ngc, "NodePublishVolume"}
	wantTeardown := []string{"NodeUnpublishVolume", ngc, "NodeUnstageVolume"}
	if !slices.Equal(setup, wantSetup) {
		t.Errorf("podstep's CSI calls setting up the PV:\n got %v\nwant %v (csiAttacher.MountDevice, csiMountMgr.SetUpAt)", setup, wantSetup)
	}
	if !slices.Equal(teardown, wantTeardown) {
		t.Errorf("podstep's CSI calls at teardown:\n got %v\nwant %v", teardown, wantTeardown)
	}
	assertPublished(t, steps, filepath.Join(root, "pods"), false)
	for _, s := range steps {
		for _, c := range s.Calls {
			if c.Method == "NodeStageVolume" && !strings.Contains(string(c.Request), filepath.Join(root, "plugins", "kubernetes.io", "csi", csiDriver)) {
				t.Errorf("podstep staged outside its root dir %s: %s", root, c.Request)
			}
		}
	}
	// The kubelet's own stage and publish are untouched by podstep's teardown.
	if _, err := os.Stat(target); err != nil {
		t.Errorf("after podstep's replay, the kubelet's publish target: %v", err)
	}
	e.compareWithKubeletCSICalls(t, real, mine, append(wantSetup, wantTeardown...))
}

// assertPublished checks that podstep's NodePublishVolume went to a target
// under its own pods dir, carried the pod-info keys (the CSIDriver has
// podInfoOnMount; csi.storage.k8s.io/ephemeral says inline or not), and that
// the target is gone after teardown.
func assertPublished(t *testing.T, steps []storageStep, podsDir string, inline bool) {
	t.Helper()
	for _, s := range steps {
		for _, c := range s.Calls {
			if c.Method != "NodePublishVolume" {
				continue
			}
			if c.Error != "" {
				t.Errorf("NodePublishVolume: %s", c.Error)
			}
			var req struct {
				TargetPath    string            `json:"target_path"`
				VolumeContext map[string]string `json:"volume_context"`
			}
			if err := json.Unmarshal(c.Request, &req); err != nil {
				t.Errorf("NodePublishVolume request %s: %v", c.Request, err)
				continue
			}
			if !strings.HasPrefix(req.TargetPath, podsDir+"/") {
				t.Errorf("NodePublishVolume target %q: want one under podstep's %s", req.TargetPath, podsDir)
			}
			if _, err := os.Stat(req.TargetPath); err == nil {
				t.Errorf("NodePublishVolume target %s still there after podstep's teardown", req.TargetPath)
			}
			if got, want := req.VolumeContext["csi.storage.k8s.io/ephemeral"], fmt.Sprint(inline); got != want {
				t.Errorf("NodePublishVolume volume_context csi.storage.k8s.io/ephemeral = %q, want %q (podInfoOnMount)", got, want)
			}
			if req.VolumeContext["csi.storage.k8s.io/pod.name"] == "" {
				t.Errorf("NodePublishVolume volume_context lacks the pod info: %v", req.VolumeContext)
			}
			return
		}
	}
	t.Error("podstep made no NodePublishVolume call")
}

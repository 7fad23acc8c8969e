//go:build cluster

package cluster

// podstep fleet on the real cluster (hack/cluster-up.sh): runner pods made
// through the API server, scheduled by spec.nodeName, run by the two real
// kubelets on their containerd 1.6 and 2.x harnesses.
//
// Besides the package's variables (KUBECONFIG, PODSTEP_NODE_16/_2,
// PODSTEP_ENDPOINT_16/_2, PODSTEP_BIN), PODSTEP_REPLAY_ENDPOINT_16/_2 name a
// containerd 1.6 and a containerd 2 harness no kubelet watches (hack/test.sh's
// cluster phase starts them): the tests that assert the replay's outcome
// annotate each node with its replay runtime (podstep.dev/replay-endpoint),
// since each node's kubelet stops pods it does not know on its own runtime
// (HandlePodCleanups). PODSTEP_FLEET_IMAGE names the runner
// image already in both runtimes; unset, fleetImage builds it with
// hack/image-build.sh and imports it into both (PODSTEP_CTR_2: the ctr of the
// containerd 2 harness, default: the ctr of ~/.cache/podstep/containerd-v2.4.2, else ctr).
//
// The cluster and its nodes come from newCluster (helpers_test.go), the
// variables every suite under test/ reads from test/internal/testenv; the
// fleet* helpers are this file's.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/test/internal/testenv"
)

const fleetNS = "podstep-fleet"

type fleetEnv struct {
	cs         kubernetes.Interface
	kubeconfig string
	bin        string
	image      string
	nodes      [2]string // 1.6's, 2's
	endpoints  [2]string // the kubelets' runtimes
	replays    [2]string // runtimes no kubelet watches, same versions
	root       string    // the repo root
	// server is the API server's URL as the runners reach it (--runner-server:
	// this cluster has no kube-proxy for the kubernetes Service; its API
	// server listens on the host's loopback, which the hostNetwork runners share).
	server string
	// hostDir is the runners' --host-dir, the test's own (fleetSharedHostDir):
	// both nodes are on this host, so it is on the nodes' disk as the
	// kubelets see it.
	hostDir string
}

// fleetArgs are podstep fleet's arguments: the cluster's, the image, the
// test's host dir, -o json, then args.
func (e *fleetEnv) fleetArgs(args ...string) []string {
	return append([]string{"fleet", "--kubeconfig", e.kubeconfig, "--image", e.image, "--runner-server", e.server,
		"--host-dir", e.hostDir, "-o", "json"}, args...)
}

var (
	fleetImageOnce sync.Once
	fleetImageName string
	fleetImageErr  error
)

func newFleetEnv(t testing.TB) *fleetEnv {
	t.Helper()
	c := newCluster(t)
	v := testenv.Require(t, "FLEET CLUSTER", "hack/test.sh's cluster phase starts the replay harnesses and sets them (see the package doc)",
		"PODSTEP_BIN", "PODSTEP_REPLAY_ENDPOINT_16", "PODSTEP_REPLAY_ENDPOINT_2")
	e := &fleetEnv{cs: c.Client, kubeconfig: c.Kubeconfig, bin: v[0], server: c.Config.Host, root: testenv.RepoRoot(),
		nodes:     [2]string{c.Nodes[0].Name, c.Nodes[1].Name},
		endpoints: [2]string{c.Nodes[0].Endpoint, c.Nodes[1].Endpoint},
		replays:   [2]string{v[1], v[2]}}
	e.image = fleetImage(t, e)
	fleetApplyDeploy(t, e)
	e.hostDir = fleetSharedHostDir(t)
	return e
}

// fleetSharedHostDir returns the runners' host dir for one test,
// DIR/podstep-fleet, where DIR is the test's own temporary dir made a
// shared mount, as / is on a systemd host: the runners mount their dirs
// Bidirectional, which the runtime refuses on a private mount ("is mounted
// on "/" but it is not a shared mount"), and this machine's / is private.
// The host dir itself is a plain dir under that mount, as
// /var/lib/podstep-fleet is on a systemd host; DIR is unmounted and removed
// when the test ends (nothing of the test stays on the machine; nothing is
// shared with the fleets of other clusters on this host).
func fleetSharedHostDir(t testing.TB) string {
	t.Helper()
	// Short (not t.TempDir, which is named after the test): a shadow's
	// sockets live under the host dir, and a unix socket path has at most
	// 107 bytes (TestFleetShadowOddNodeUserNamespaces' was 112).
	dir, err := os.MkdirTemp("", "psf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	for _, args := range [][]string{{"--bind", dir, dir}, {"--make-shared", dir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %v: %v\n%s", args, err, out)
		}
	}
	// before the dir's removal (cleanups run last first)
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return filepath.Join(dir, "podstep-fleet")
}

// fleetImage is the runner image, built and imported into both runtimes once.
func fleetImage(t testing.TB, e *fleetEnv) string {
	if img := os.Getenv("PODSTEP_FLEET_IMAGE"); img != "" {
		return img
	}
	fleetImageOnce.Do(func() {
		name := ""
		for i, ep := range e.endpoints {
			cmd := exec.Command("bash", filepath.Join(e.root, "hack", "image-build.sh"), "--import", ep)
			ctr := os.Getenv("PODSTEP_CTR_2")
			if home, _ := os.UserHomeDir(); ctr == "" && home != "" {
				// hack/containerd-up.sh's containerd 2 build has its own ctr
				if c := filepath.Join(home, ".cache", "podstep", "containerd-v2.4.2", "bin", "ctr"); fileExists(c) {
					ctr = c
				}
			}
			if i == 1 && ctr != "" {
				cmd.Env = append(os.Environ(), "PODSTEP_CTR="+ctr)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				fleetImageErr = fmt.Errorf("hack/image-build.sh --import %s: %v\n%s", ep, err, stderr.String())
				return
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			name = lines[len(lines)-1]
		}
		fleetImageName = name
	})
	if fleetImageErr != nil {
		t.Fatal(fleetImageErr)
	}
	return fleetImageName
}

// fleetApplyDeploy creates deploy/fleet.yaml's objects (those that exist are kept).
func fleetApplyDeploy(t testing.TB, e *fleetEnv) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.root, "deploy", "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("deploy/fleet.yaml: %v", err)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = e.cs.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = e.cs.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole:
			// the file's rules, also over those of an earlier run
			if _, err = e.cs.RbacV1().ClusterRoles().Create(ctx, o, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				_, err = e.cs.RbacV1().ClusterRoles().Update(ctx, o, metav1.UpdateOptions{})
			}
		case *rbacv1.ClusterRoleBinding:
			_, err = e.cs.RbacV1().ClusterRoleBindings().Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = e.cs.RbacV1().RoleBindings(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("deploy/fleet.yaml: unexpected %T", obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("deploy/fleet.yaml: %v", err)
		}
	}
}

// fleetReport is the part of `podstep fleet -o json` the tests read.
type fleetReport struct {
	raw   string // the whole output
	Nodes []struct {
		Node         string `json:"node"`
		Status       string `json:"status"`
		Runtime      string `json:"runtime"`
		Kubelet      string `json:"kubelet"`
		Endpoint     string `json:"endpoint"`
		EndpointFrom string `json:"endpoint_from"`
		Shadow       bool   `json:"shadow"`
		Start        *struct {
			Endpoint string `json:"endpoint"`
			Why      string `json:"why"`
		} `json:"start"`
		StoppedFromOutside string `json:"stopped_from_outside"`
		ExitCode           int    `json:"exit_code"`
		Error              string `json:"error"`
		Steps              []struct {
			Name   string `json:"name"`
			State  string `json:"state"`
			Reason string `json:"reason"`
		} `json:"steps"`
		Summary *struct {
			Outcome string `json:"outcome"`
			UID     string `json:"uid"`
		} `json:"summary"`
	} `json:"nodes"`
	Analysis struct {
		Groups []struct {
			Nodes []string `json:"nodes"`
		} `json:"groups"`
		Odd []struct {
			Nodes []string `json:"nodes"`
			Step  *struct {
				Name, Reason, Message string
			} `json:"step"`
		} `json:"odd"`
		ExitCode int `json:"exit_code"`
	} `json:"analysis"`
}

// fleetRun runs podstep fleet ARGS -o json and returns the report, stderr
// and the exit code.
func (e *fleetEnv) run(t testing.TB, args ...string) (*fleetReport, string, int) {
	t.Helper()
	cmd := exec.Command(e.bin, e.fleetArgs(args...)...)
	cmd.Dir = e.root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	rep := fleetReport{raw: stdout.String()}
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("fleet -o json: %v\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
	}
	return &rep, stderr.String(), code
}

// nothingLeft checks that no fleet object is in the namespace and that
// nothing is left on the nodes' disk (both nodes are on this host): no dir
// under the runners' host dir (their root and log dirs DIR/NODE/root and
// DIR/NODE/logs, once the kubelet's hostPaths), no mount.
func (e *fleetEnv) nothingLeft(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		pods, err := e.cs.CoreV1().Pods(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: "podstep.dev/fleet"})
		if err != nil {
			t.Fatal(err)
		}
		cms, err := e.cs.CoreV1().ConfigMaps(fleetNS).List(ctx, metav1.ListOptions{LabelSelector: "podstep.dev/fleet"})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items)+len(cms.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var names []string
			for _, p := range pods.Items {
				names = append(names, "pod/"+p.Name)
			}
			for _, c := range cms.Items {
				names = append(names, "configmap/"+c.Name)
			}
			t.Fatalf("left in namespace %s: %v", fleetNS, names)
		}
		time.Sleep(time.Second)
	}
	// the host dir itself (the runners' hostPath, made by the kubelet) may
	// stay, and the shadows' image cache in it (docs/shadow.md): a
	// containerd root per node runtime, HOST_DIR/shadow-cache/KEY/root,
	// nothing else, nothing mounted (below)
	var left []string
	cache := filepath.Join(e.hostDir, "shadow-cache")
	_ = filepath.WalkDir(e.hostDir, func(p string, _ os.DirEntry, err error) error {
		if err != nil || p == e.hostDir || p == cache {
			return nil
		}
		if rel, err := filepath.Rel(cache, p); err == nil && !strings.HasPrefix(rel, "..") {
			if parts := strings.Split(rel, string(filepath.Separator)); len(parts) == 1 || parts[1] == "root" {
				return nil
			}
		}
		left = append(left, p)
		return nil
	})
	// the mounts a runner makes for volumes reach the host (Bidirectional)
	for _, m := range testenv.MountsUnder(filepath.Dir(e.hostDir)) {
		left = append(left, "mount "+m)
	}
	if len(left) > 0 {
		t.Errorf("left on the nodes' disk: %v", left)
	}
}

// annotateReplay gives each test node its replay runtime (the node
// annotation podstep.dev/replay-endpoint), removed when the test ends.
func (e *fleetEnv) annotateReplay(t testing.TB) {
	t.Helper()
	for i, n := range e.nodes {
		e.setReplayAnnotation(t, n, e.replays[i])
	}
	t.Cleanup(func() { e.removeReplayAnnotations(t) })
}

func (e *fleetEnv) removeReplayAnnotations(t testing.TB) {
	t.Helper()
	for _, n := range e.nodes {
		e.setReplayAnnotation(t, n, "")
	}
}

// setReplayAnnotation sets (v != "") or removes the node's annotation.
func (e *fleetEnv) setReplayAnnotation(t testing.TB, node, v string) {
	t.Helper()
	val := "null"
	if v != "" {
		b, _ := json.Marshal(v)
		val = string(b)
	}
	patch := `{"metadata":{"annotations":{"podstep.dev/replay-endpoint":` + val + `}}}`
	if _, err := e.cs.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate node %s: %v", node, err)
	}
}

// fleetCRIPods lists the sandboxes and containers of the pod with uid on
// the runtime at endpoint (through the CRI).
func fleetCRIPods(t testing.TB, endpoint, uid string) []string {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial %s: %v", endpoint, err)
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs := runtimeapi.NewRuntimeServiceClient(conn)
	sel := map[string]string{"io.kubernetes.pod.uid": uid}
	sbs, err := rs.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatalf("ListPodSandbox on %s: %v", endpoint, err)
	}
	cs, err := rs.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatalf("ListContainers on %s: %v", endpoint, err)
	}
	var out []string
	for _, s := range sbs.Items {
		out = append(out, "sandbox "+s.Id+" "+s.State.String())
	}
	for _, c := range cs.Containers {
		out = append(out, "container "+c.Id+" "+c.State.String())
	}
	return out
}

// nothingOnRuntimes checks that no sandbox or container of the replayed
// pods (their UIDs) is on any runtime: the replay runtimes, the kubelets'.
func (e *fleetEnv) nothingOnRuntimes(t testing.TB, uids []string) {
	t.Helper()
	for _, ep := range append(e.replays[:], e.endpoints[:]...) {
		for _, uid := range uids {
			if left := fleetCRIPods(t, ep, uid); len(left) > 0 {
				t.Errorf("left on %s for pod UID %s: %v", ep, uid, left)
			}
		}
	}
}

// wantReplayRows checks that each node replayed on its replay runtime and
// names that runtime's version; it returns the pods' UIDs.
func (e *fleetEnv) wantReplayRows(t testing.TB, rep *fleetReport) []string {
	t.Helper()
	var uids []string
	for _, n := range rep.Nodes {
		i := slices.Index(e.nodes[:], n.Node)
		if i < 0 {
			t.Errorf("unexpected node %s", n.Node)
			continue
		}
		if n.Endpoint != e.replays[i] || n.EndpointFrom != "annotation" {
			t.Errorf("node %s: endpoint %s (%s), want %s (annotation)", n.Node, n.Endpoint, n.EndpointFrom, e.replays[i])
		}
		if want := []string{"containerd 1.6", "containerd v2"}[i]; !strings.HasPrefix(n.Runtime, want) || n.Kubelet != "v1.37.0" {
			t.Errorf("node %s: runtime %q kubelet %q, want %s… (its replay runtime's) and v1.37.0", n.Node, n.Runtime, n.Kubelet, want)
		}
		if n.Summary != nil {
			uids = append(uids, n.Summary.UID)
		}
	}
	return uids
}

func TestFleetHelloOnBothNodes(t *testing.T) {
	e := newFleetEnv(t)
	e.annotateReplay(t)
	rep, stderr, code := e.run(t, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=0")
	if code != 0 || len(rep.Nodes) != 2 {
		t.Fatalf("exit %d, %d nodes; stderr:\n%s", code, len(rep.Nodes), stderr)
	}
	for _, n := range rep.Nodes {
		if n.Status != "ran" || n.Summary == nil || n.Summary.Outcome != "running" {
			t.Errorf("node %s: %s %+v %s %s", n.Node, n.Status, n.Summary, n.Error, n.StoppedFromOutside)
		}
	}
	uids := e.wantReplayRows(t, rep)
	if len(uids) != 2 || uids[0] == uids[1] {
		t.Errorf("pod UIDs %v: one per node expected", uids)
	}
	if len(rep.Analysis.Groups) != 1 || len(rep.Analysis.Odd) != 0 {
		t.Errorf("groups %+v odd %+v: both nodes alike expected", rep.Analysis.Groups, rep.Analysis.Odd)
	}
	if !strings.Contains(stderr, "deleted 2 runner pod(s)") {
		t.Errorf("stderr does not say what was deleted:\n%s", stderr)
	}
	if strings.Contains(stderr, "HandlePodCleanups") {
		t.Errorf("the kubelet-runtime warning with both nodes on replay runtimes:\n%s", stderr)
	}
	e.nothingLeft(t)
	e.nothingOnRuntimes(t, uids)
}

// Without replay runtimes and with --shadow=never the runners replay on the kubelets' own runtimes:
// the header warns once (the kubelet may stop the replay), each row says
// the endpoint came from configz. Whether the replay survives the kubelet's
// housekeeping is a race: not asserted; a run it stopped carries the hint.
func TestFleetKubeletRuntimeWarning(t *testing.T) {
	e := newFleetEnv(t)
	e.removeReplayAnnotations(t)
	rep, stderr, code := e.run(t, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=0",
		"--shadow=never")
	if len(rep.Nodes) != 2 {
		t.Fatalf("exit %d, %d nodes; stderr:\n%s", code, len(rep.Nodes), stderr)
	}
	// One warning line; a run the kubelet stopped names HandlePodCleanups
	// again in its own row (the race this test does not assert).
	n := 0
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "warning:") && strings.Contains(l, "HandlePodCleanups") {
			n++
		}
	}
	if n != 1 || !strings.Contains(stderr, "podstep.dev/replay-endpoint=unix:///PATH") {
		t.Errorf("want one warning naming HandlePodCleanups and the annotation, got %d:\n%s", n, stderr)
	}
	var uids []string
	for i, n := range rep.Nodes {
		// The kubelet's endpoint as its configz says: the runtime's, or a podstep
		// proxy's in front of it (hack/cluster-up.sh with PODSTEP_CLUSTER_PROXY).
		want := e.endpoints[i]
		if k := os.Getenv("PODSTEP_KUBELET_ENDPOINT_" + [2]string{"16", "2"}[i]); k != "" {
			want = k
		}
		if n.Endpoint != want || n.EndpointFrom != "configz" {
			t.Errorf("node %s: endpoint %s (%s), want %s (configz)", n.Node, n.Endpoint, n.EndpointFrom, want)
		}
		if n.Summary != nil {
			uids = append(uids, n.Summary.UID)
		}
		t.Logf("node %s: status %s outcome %+v; stopped from outside: %q", n.Node, n.Status, n.Summary != nil && n.Summary.Outcome == "running", n.StoppedFromOutside)
	}
	e.nothingLeft(t)
	e.nothingOnRuntimes(t, uids)
}

// hostUsers: false: containerd 1.6 reports no user-namespace support and
// the kubelet refuses the pod; containerd 2.x with runc 1.3 runs it.
func TestFleetOddNodeUserNamespaces(t *testing.T) {
	e := newFleetEnv(t)
	e.annotateReplay(t)
	rep, stderr, code := e.run(t, "-f", "testdata/pods/userns.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=0")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the pod failed on one node); stderr:\n%s", code, stderr)
	}
	if len(rep.Analysis.Odd) != 1 {
		t.Fatalf("odd groups %+v, want one", rep.Analysis.Odd)
	}
	o := rep.Analysis.Odd[0]
	if !slices.Equal(o.Nodes, []string{e.nodes[0]}) || o.Step == nil || o.Step.Name != "run-sandbox" || o.Step.Reason != "CreatePodSandboxError" ||
		!strings.Contains(o.Step.Message, "user namespaces") {
		t.Errorf("odd %+v step %+v: want %s at run-sandbox, CreatePodSandboxError, user namespaces", o.Nodes, o.Step, e.nodes[0])
	}
	for _, n := range rep.Nodes {
		if n.StoppedFromOutside != "" {
			t.Errorf("node %s: stopped from outside %q on its replay runtime", n.Node, n.StoppedFromOutside)
		}
	}
	uids := e.wantReplayRows(t, rep)
	e.nothingLeft(t)
	e.nothingOnRuntimes(t, uids)
}

// A node that exists only as a Node object: its runner never starts.
func TestFleetNodeWithoutKubelet(t *testing.T) {
	e := newFleetEnv(t)
	e.annotateReplay(t)
	ghost := fleetGhostNodes(t, e, "podstep-fleet-ghost", 1)[0]
	start := time.Now()
	rep, stderr, code := e.run(t, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--node", ghost,
		"--timeout", "20s", "--run-flag=--settle=0")
	if code != 3 {
		t.Errorf("exit %d, want 3 (a runner not started); stderr:\n%s", code, stderr)
	}
	got := map[string]string{}
	for _, n := range rep.Nodes {
		got[n.Node] = n.Status
		if n.Node == ghost && !strings.Contains(n.Error, "20s") {
			t.Errorf("ghost node's error %q does not say the timeout", n.Error)
		}
	}
	want := map[string]string{e.nodes[0]: "ran", e.nodes[1]: "ran", ghost: "runner not started"}
	for n, s := range want {
		if got[n] != s {
			t.Errorf("node %s: %q, want %q (all: %v)", n, got[n], s, got)
		}
	}
	if d := time.Since(start); d > 3*time.Minute {
		t.Errorf("the fleet took %s with --timeout 20s", d)
	}
	e.nothingLeft(t)
}

// fleetGhostNodes creates n Node objects with no kubelet behind them,
// deleted when the test ends.
func fleetGhostNodes(t testing.TB, e *fleetEnv, prefix string, n int) []string {
	t.Helper()
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%03d", prefix, i)
		_, err := e.cs.CoreV1().Nodes().Create(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"podstep.dev/ghost": prefix}}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	t.Cleanup(func() {
		for _, name := range names {
			_ = e.cs.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	return names
}

// startFleet starts podstep fleet in the background and waits until
// both runners started (their stderr lines).
func (e *fleetEnv) startFleet(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(e.bin, e.fleetArgs(args...)...)
	cmd.Dir = e.root
	var stdout bytes.Buffer
	stderr := &syncBuffer{}
	cmd.Stdout = &stdout
	pr, pw, _ := os.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	started := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		n := 0
		for sc.Scan() {
			stderr.write(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "runner started") {
				if n++; n == 2 {
					close(started)
				}
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("the runners did not start; stderr:\n%s", stderr.String())
	}
	return cmd, &stdout, stderr
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) write(x string) { s.mu.Lock(); s.b.WriteString(x); s.mu.Unlock() }
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func (e *fleetEnv) runnerPods(t testing.TB) int {
	pods, err := e.cs.CoreV1().Pods(fleetNS).List(context.Background(), metav1.ListOptions{LabelSelector: "podstep.dev/fleet-role=runner"})
	if err != nil {
		t.Fatal(err)
	}
	return len(pods.Items)
}

// Ctrl-C mid-fleet: the runners are deleted (each tears its pod down), exit 130.
func TestFleetInterrupted(t *testing.T) {
	e := newFleetEnv(t)
	e.annotateReplay(t)
	// --settle 60s: each runner is in its relist step for a minute.
	cmd, _, stderr := e.startFleet(t, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=60s")
	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 130 {
		t.Errorf("exit %d, want 130; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), "deleted") {
		t.Errorf("stderr does not say it was interrupted and what it deleted:\n%s", stderr.String())
	}
	e.nothingLeft(t)
}

// kill -9 of podstep: the runners stay; podstep fleet cleanup deletes their
// parent, and the garbage collector removes them.
func TestFleetKilledThenCleanup(t *testing.T) {
	e := newFleetEnv(t)
	e.annotateReplay(t)
	cmd, _, _ := e.startFleet(t, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=30s")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if n := e.runnerPods(t); n != 2 {
		t.Fatalf("%d runner pods after kill -9, want 2 (still running)", n)
	}
	out, err := exec.Command(e.bin, "fleet", "cleanup", "--kubeconfig", e.kubeconfig, "--wait", "2m").CombinedOutput()
	if err != nil {
		t.Fatalf("fleet cleanup: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "the garbage collector removed 2 runner pod(s)") {
		t.Errorf("fleet cleanup says:\n%s", out)
	}
	e.nothingLeft(t)
}

// A kubeconfig whose identity has no permission: the message names the
// verb and resource, exit 2.
func TestFleetPermissionDenied(t *testing.T) {
	e := newFleetEnv(t)
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "podstep-fleet-nobody", Namespace: fleetNS}}
	if _, err := e.cs.CoreV1().ServiceAccounts(fleetNS).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tok, err := e.cs.CoreV1().ServiceAccounts(fleetNS).CreateToken(ctx, sa.Name, &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: ptrInt64(600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := clientcmd.LoadFromFile(e.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cur := raw.Contexts[raw.CurrentContext]
	raw.AuthInfos = map[string]*clientcmdapi.AuthInfo{"nobody": {Token: tok.Status.Token}}
	cur.AuthInfo = "nobody"
	kc := filepath.Join(t.TempDir(), "nobody.kubeconfig")
	if err := clientcmd.WriteToFile(*raw, kc); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(e.bin, "fleet", "--kubeconfig", kc, "--image", e.image, "-f", "testdata/pods/hello.yaml")
	cmd.Dir = e.root
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), `denied "list" on "nodes"`) {
		t.Errorf("exit %d:\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if strings.Contains(string(out), tok.Status.Token) {
		t.Errorf("the token is in the output")
	}
}

// BenchmarkFleetWall is the bar "fleet wall time ≤ the slowest node's run
// + 5 s on two nodes": each iteration runs `podstep run` on each node's
// replay runtime directly (the slowest of the two), then the fleet on both.
func BenchmarkFleetWall(b *testing.B) {
	e := newFleetEnv(b)
	e.annotateReplay(b)
	var fleetS, slowestS []float64
	failed := 0
	for i := 0; i < b.N; i++ {
		slowest := 0.0
		for _, ep := range e.replays {
			start := time.Now()
			cmd := exec.Command(e.bin, "run", "--auto", "-q", "--settle", "0", "-f", "testdata/pods/hello.yaml", "-r", ep,
				"--root-dir", b.TempDir(), "--log-dir", b.TempDir())
			cmd.Dir = e.root
			// exit 1 (the pod failed) is counted, not fatal (none expected on a
			// replay runtime: no kubelet stops the pod there).
			if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 1 {
				b.Fatalf("run on %s: %v\n%s", ep, err, out)
			} else if err != nil {
				failed++
			}
			slowest = max(slowest, time.Since(start).Seconds())
		}
		start := time.Now()
		_, stderr, code := e.run(b, "-f", "testdata/pods/hello.yaml", "--node", e.nodes[0], "--node", e.nodes[1], "--timeout", "2m", "--run-flag=--settle=0")
		if code != 0 && code != 1 {
			b.Fatalf("fleet exit %d:\n%s", code, stderr)
		} else if code == 1 {
			failed++
		}
		fleetS = append(fleetS, time.Since(start).Seconds())
		slowestS = append(slowestS, slowest)
	}
	b.ReportMetric(fleetMedian(fleetS), "fleet-s")
	b.ReportMetric(fleetMedian(slowestS), "slowest-run-s")
	b.ReportMetric(fleetMedian(fleetS)-fleetMedian(slowestS), "overhead-s")
	b.ReportMetric(float64(failed), "failed-runs")
}

// BenchmarkFleet200Nodes is the bar "200 Node objects (no kubelets),
// --timeout 20s: RSS ≤ 100 MB, ≤ 3 API requests per node per second at the
// peak, every node reported".
func BenchmarkFleet200Nodes(b *testing.B) {
	e := newFleetEnv(b)
	nodes := fleetGhostNodes(b, e, "podstep-fleet-bench", 200)
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(e.bin, "fleet", "--kubeconfig", e.kubeconfig, "--image", e.image, "-o", "json", "-f", "testdata/pods/hello.yaml",
			"--nodes", "podstep.dev/ghost=podstep-fleet-bench", "--timeout", "20s", "--concurrency", "200")
		cmd.Dir = e.root
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		_ = cmd.Run()
		wall := time.Since(start)
		var rep fleetReport
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			b.Fatalf("%v\n%s", err, stderr.String())
		}
		if len(rep.Nodes) != len(nodes) {
			b.Fatalf("%d nodes reported, want %d", len(rep.Nodes), len(nodes))
		}
		for _, n := range rep.Nodes {
			if n.Status != "runner not started" {
				b.Fatalf("node %s: %s", n.Node, n.Status)
			}
		}
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss // KiB
		var total, peak int
		if _, err := fmt.Sscanf(stderr.String()[strings.LastIndex(stderr.String(), "(")+1:], "%d API requests, at most %d in one second", &total, &peak); err != nil {
			b.Fatalf("no request count in stderr: %v\n%s", err, stderr.String())
		}
		b.ReportMetric(float64(rss)/1024, "rss-MB")
		b.ReportMetric(float64(peak)/float64(len(nodes)), "peak-req/node/s")
		b.ReportMetric(float64(total), "requests")
		b.ReportMetric(wall.Seconds(), "wall-s")
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func ptrInt64(v int64) *int64 { return &v }

func fleetMedian(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

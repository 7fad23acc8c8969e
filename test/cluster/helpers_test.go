//go:build cluster

// Package cluster runs against a real Kubernetes v1.37.0 cluster on this machine
// (hack/cluster-up.sh): etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, and two nodes, a kubelet on the containerd 1.6 harness and one
// on the containerd 2 harness. Objects are made through the API server with
// client-go, so the real controllers, scheduler and kubelets do their work.
//
// Environment (set by hack/test.sh's cluster phase, or from /work/logs/cluster.env):
//
//	KUBECONFIG                       the admin kubeconfig cluster-up.sh printed last
//	PODSTEP_NODE_16, PODSTEP_NODE_2  the two nodes' names
//	PODSTEP_ENDPOINT_16, _2          their runtimes' CRI endpoints (unix:///.../containerd.sock)
//	PODSTEP_KUBELET_ENDPOINT_16, _2  the kubelets' CRI endpoints when a podstep proxy sits between
//	                                 kubelet and runtime (default: PODSTEP_ENDPOINT_*)
//	PODSTEP_LIVE_URL_16, _2          that proxy's live page (--serve), http://127.0.0.1:PORT/
//	PODSTEP_RUNTIME_16, _2           what each harness runs ("containerd 1.6.20~ds1", "containerd v2.4.2"):
//	                                 the node's status must say so
//	PODSTEP_REGISTRY_16, _2          each harness's private registry (host:port), with
//	PODSTEP_REGISTRY_USER, PODSTEP_REGISTRY_PASSWORD, PODSTEP_REGISTRY_IMAGE_16, _2
//	PODSTEP_BIN                      the podstep binary under test (runPodstep)
//	CI=true                          a missing variable fails instead of skipping
//
// The helpers in this file (newCluster, newNamespace, waitForPod, ...) are shared
// by every test of the package.
package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podstep/podstep/test/internal/testenv"
)

const (
	// runtimeLabel is the node label cluster-up.sh gives each node: containerd-1.6 or containerd-2.
	runtimeLabel = "podstep.dev/runtime"
	// busybox is the harness's local image (imported by containerd-up.sh; no registry needed).
	busybox = "docker.io/library/busybox:1.35"
	// podTimeout bounds how long a pod may take to be scheduled and run on this busy machine.
	podTimeout = 2 * time.Minute
)

// Node is one node of the cluster and the harness its kubelet runs on.
type Node struct {
	Name     string // the Node object's name
	Runtime  string // "1.6" or "2"
	Label    string // its podstep.dev/runtime label: containerd-1.6 or containerd-2
	Endpoint string // the runtime's CRI endpoint, unix:///...
	// KubeletEndpoint is the CRI endpoint the kubelet uses: Endpoint, or the socket of a
	// podstep proxy in front of it (cluster-up.sh with PODSTEP_CLUSTER_PROXY).
	KubeletEndpoint string
	// LiveURL is that proxy's live page (--serve), empty without one.
	LiveURL string
	// Want is what the harness says it runs ("containerd 1.6.20~ds1"), empty if not given.
	Want string
	// Registry, RegistryImage: the harness's private registry and its one image (may be empty).
	Registry, RegistryImage string
}

// Cluster is the cluster under test: a client-go clientset with the admin's
// credentials, its rest config, and the two nodes.
type Cluster struct {
	Client     kubernetes.Interface
	Config     *rest.Config
	Kubeconfig string
	Nodes      []Node // containerd 1.6's first, then containerd 2's
	// RegistryUser, RegistryPassword: the harness registries' credentials (test-only values).
	RegistryUser, RegistryPassword string
}

// Node returns the node running runtime rt ("1.6" or "2").
func (c *Cluster) Node(rt string) Node {
	for _, n := range c.Nodes {
		if n.Runtime == rt {
			return n
		}
	}
	panic("no node for runtime " + rt)
}

// notRun skips the test loudly, or fails it under CI=true.
func notRun(t testing.TB, why string) {
	t.Helper()
	testenv.NotRun(t, "CLUSTER", why, "hack/test.sh starts a cluster (hack/cluster-up.sh) and sets the variables")
}

// newCluster reads the environment and connects to the cluster; it skips the
// test loudly (fails it under CI=true) when the cluster's variables are missing.
func newCluster(t testing.TB) *Cluster {
	t.Helper()
	var missing []string
	get := func(k string) string {
		v := os.Getenv(k)
		if v == "" {
			missing = append(missing, k)
		}
		return v
	}
	kubeconfig := get("KUBECONFIG")
	c := &Cluster{
		Kubeconfig:       kubeconfig,
		RegistryUser:     os.Getenv("PODSTEP_REGISTRY_USER"),
		RegistryPassword: os.Getenv("PODSTEP_REGISTRY_PASSWORD"),
	}
	for _, rt := range []struct{ rt, suffix string }{{"1.6", "16"}, {"2", "2"}} {
		c.Nodes = append(c.Nodes, Node{
			Name:          get("PODSTEP_NODE_" + rt.suffix),
			Runtime:       rt.rt,
			Label:         "containerd-" + rt.rt,
			Endpoint:      get("PODSTEP_ENDPOINT_" + rt.suffix),
			Want:          os.Getenv("PODSTEP_RUNTIME_" + rt.suffix),
			Registry:      os.Getenv("PODSTEP_REGISTRY_" + rt.suffix),
			RegistryImage: os.Getenv("PODSTEP_REGISTRY_IMAGE_" + rt.suffix),
		})
		n := &c.Nodes[len(c.Nodes)-1]
		n.KubeletEndpoint = os.Getenv("PODSTEP_KUBELET_ENDPOINT_" + rt.suffix)
		n.LiveURL = os.Getenv("PODSTEP_LIVE_URL_" + rt.suffix)
		if n.KubeletEndpoint == "" {
			n.KubeletEndpoint = n.Endpoint
		}
	}
	if len(missing) > 0 {
		notRun(t, strings.Join(missing, ", ")+" not set")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("KUBECONFIG=%s: %v", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("client for %s: %v", cfg.Host, err)
	}
	c.Client, c.Config = cs, cfg
	return c
}

// ctx is a context for one test's API calls, cancelled when the test ends.
func ctx(t *testing.T) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	return c
}

// waitFor polls cond every 250 ms until it says done, returns an error, or
// timeout passes; then the test fails, naming what it waited for (and cond's
// last error).
func waitFor(t *testing.T, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		done, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return done, nil
	})
	if err != nil {
		if last != nil {
			t.Fatalf("waiting for %s: not after %s (last error: %v)", what, timeout, last)
		}
		t.Fatalf("waiting for %s: not after %s", what, timeout)
	}
}

// newNamespace makes a namespace of its own for the test (podstep-<prefix>-<random>),
// waits until its default ServiceAccount and kube-root-ca.crt exist (a pod needs
// both), and deletes it when the test ends. When the test failed, it first logs
// the namespace's pods and events.
func (c *Cluster) newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	// A random name, another on a clash: TestFidelity alone makes ~50 at
	// once, and a namespace of an earlier test may still be terminating
	// ("already exists" failed a run once).
	var (
		name string
		ns   *corev1.Namespace
		err  error
	)
	for try := 0; ; try++ {
		name = fmt.Sprintf("podstep-%s-%05d", prefix, rand.IntN(100000))
		ns, err = c.Client.CoreV1().Namespaces().Create(ctx(t), &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"podstep.dev/test": labelValue(t.Name())}},
		}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) || try == 9 {
			break
		}
	}
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpNamespace(t, ns.Name)
		}
		bg := metav1.DeletePropagationBackground
		err := c.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	waitFor(t, time.Minute, "ServiceAccount "+name+"/default", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	waitFor(t, time.Minute, "ConfigMap "+name+"/kube-root-ca.crt", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, err
	})
	return name
}

// labelValue is s as a label value: a subtest's name ("TestX/a/b") has
// characters a label value may not.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'; !ok {
			b[i] = '_'
		}
	}
	if len(b) > 63 {
		b = b[len(b)-63:]
	}
	return strings.Trim(string(b), "-_.")
}

// dumpNamespace logs every pod of ns (node, phase, container states) and the
// namespace's events: what the scheduler and the kubelets said.
func (c *Cluster) dumpNamespace(t *testing.T, ns string) {
	t.Helper()
	bg := context.Background()
	pods, err := c.Client.CoreV1().Pods(ns).List(bg, metav1.ListOptions{})
	if err != nil {
		t.Logf("list pods in %s: %v", ns, err)
	} else {
		for _, p := range pods.Items {
			t.Logf("pod %s/%s on %q: %s", ns, p.Name, p.Spec.NodeName, describePod(&p))
		}
	}
	evs, err := c.Client.CoreV1().Events(ns).List(bg, metav1.ListOptions{})
	if err != nil {
		t.Logf("list events in %s: %v", ns, err)
		return
	}
	for _, e := range evs.Items {
		t.Logf("event %s %s/%s %s: %s (from %s %s)", e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Source.Component, e.Source.Host)
	}
}

// describePod is a pod's phase, conditions and container states in one line.
func describePod(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", p.Status.Phase)
	for _, cond := range p.Status.Conditions {
		fmt.Fprintf(&b, ", %s=%s", cond.Type, cond.Status)
		if cond.Reason != "" {
			fmt.Fprintf(&b, " (%s: %s)", cond.Reason, cond.Message)
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		switch {
		case s.State.Running != nil:
			fmt.Fprintf(&b, "; %s running", s.Name)
		case s.State.Waiting != nil:
			fmt.Fprintf(&b, "; %s waiting %s: %s", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
		case s.State.Terminated != nil:
			fmt.Fprintf(&b, "; %s terminated %s (exit %d)", s.Name, s.State.Terminated.Reason, s.State.Terminated.ExitCode)
		}
	}
	return b.String()
}

// waitForPod waits until cond holds for pod ns/name and returns the pod.
func (c *Cluster) waitForPod(t *testing.T, ns, name, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	waitFor(t, podTimeout, "pod "+ns+"/"+name+" "+what, func(ctx context.Context) (bool, error) {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		if cond(p) {
			return true, nil
		}
		return false, errors.New(describePod(p))
	})
	return pod
}

// podRunning: every container of the pod runs and is ready.
func podRunning(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Running == nil || !s.Ready {
			return false
		}
	}
	return true
}

// waitForPodRunning waits until every container of ns/name runs and is ready.
func (c *Cluster) waitForPodRunning(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	return c.waitForPod(t, ns, name, "running", podRunning)
}

// podsOf lists the pods a Deployment's selector matches.
func (c *Cluster) podsOf(ctx context.Context, d *appsv1.Deployment) ([]corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list, err := c.Client.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitForDeployment waits until the Deployment's replicas all run and are
// ready (as its controller and the kubelets report them) and returns its pods.
func (c *Cluster) waitForDeployment(t *testing.T, d *appsv1.Deployment) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	want := int(*d.Spec.Replicas)
	waitFor(t, podTimeout, fmt.Sprintf("Deployment %s/%s: %d pods running", d.Namespace, d.Name, want), func(ctx context.Context) (bool, error) {
		ps, err := c.podsOf(ctx, d)
		if err != nil {
			return false, err
		}
		pods = ps
		var states []string
		running := 0
		for i := range ps {
			if ps[i].DeletionTimestamp == nil && podRunning(&ps[i]) {
				running++
			}
			states = append(states, ps[i].Name+" on "+ps[i].Spec.NodeName+": "+describePod(&ps[i]))
		}
		if running == want && len(ps) == want {
			return true, nil
		}
		return false, fmt.Errorf("%d of %d running: %s", running, want, strings.Join(states, " | "))
	})
	return pods
}

// sleeper is a busybox container that runs until it is stopped (script, then sleep).
func sleeper(name, script string) corev1.Container {
	if script != "" {
		script += "; "
	}
	return corev1.Container{
		Name:            name,
		Image:           busybox,
		ImagePullPolicy: corev1.PullIfNotPresent,
		Command:         []string{"sh", "-c", script + "exec sleep 3600"},
	}
}

// onNode pins a pod spec to one node through its runtime label (the scheduler
// still does the binding).
func onNode(spec *corev1.PodSpec, n Node) {
	spec.NodeSelector = map[string]string{runtimeLabel: n.Label}
}

// result is one podstep invocation's outcome.
type result struct { //nolint:unused // runPodstep's; kept with it
	stdout, stderr string
	exit           int
}

// runPodstep runs PODSTEP_BIN with args and KUBECONFIG set, at most timeout;
// it skips loudly (fails under CI=true) without PODSTEP_BIN.
//
//nolint:unused // shared helper for the cluster tests that drive PODSTEP_BIN (none yet)
func (c *Cluster) runPodstep(t *testing.T, timeout time.Duration, args ...string) result {
	t.Helper()
	bin := os.Getenv("PODSTEP_BIN")
	if bin == "" {
		notRun(t, "PODSTEP_BIN not set")
	}
	cctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "NO_COLOR=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.exit = ee.ExitCode()
	default:
		t.Fatalf("run %s %s: %v", bin, strings.Join(args, " "), err)
	}
	if cctx.Err() != nil {
		t.Fatalf("%s %s: did not finish in %s\nstdout:\n%s\nstderr:\n%s", bin, strings.Join(args, " "), timeout, r.stdout, r.stderr)
	}
	return r
}

package fleet

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podstep/podstep/internal/cluster/kubefake"
	"github.com/podstep/podstep/internal/manifest"
)

// The orchestration's bookkeeping against client-go's fake clientset (no
// kubelet: no runner ever starts). What runners do on real nodes is
// test/cluster/fleet_test.go's.
func TestRunNotStartedAndCleanedUp(t *testing.T) {
	nodes := []runtime.Object{
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ghost-a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ghost-b"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown"}}}},
	}
	cs := fake.NewClientset(nodes...)
	var created []runtime.Object
	cs.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject()
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Labels[LabelRole] == RoleParent {
			cm.UID = "parent-uid" // the API server gives one
		}
		created = append(created, obj)
		return false, nil, nil
	})
	out, progress := runHello(t, cs, Options{Timeout: 300 * time.Millisecond, Concurrency: 1})
	for _, r := range out.Results {
		if r.Status != NotStarted || !strings.Contains(r.Error, "no runner started within 300ms") {
			t.Errorf("node %s: %s %q", r.Node, r.Status, r.Error)
		}
	}
	if !strings.Contains(out.Results[0].Error, "no Ready condition") || !strings.Contains(out.Results[1].Error, "NodeStatusUnknown") {
		t.Errorf("errors do not say why: %q, %q", out.Results[0].Error, out.Results[1].Error)
	}
	if out.Analysis.ExitCode != exitRuntime {
		t.Errorf("exit %d, want %d", out.Analysis.ExitCode, exitRuntime)
	}
	// parent, then (manifest, runner) per node: each owned by the parent.
	if len(created) != 5 {
		t.Fatalf("created %d objects, want 5", len(created))
	}
	for _, o := range created[1:] {
		m := o.(metav1.Object)
		if len(m.GetOwnerReferences()) != 1 || m.GetOwnerReferences()[0].UID != "parent-uid" || m.GetLabels()[LabelFleet] != out.ID {
			t.Errorf("%s: owners %v labels %v", m.GetName(), m.GetOwnerReferences(), m.GetLabels())
		}
	}
	pods, _ := cs.CoreV1().Pods("podstep-fleet").List(context.Background(), metav1.ListOptions{})
	cms, _ := cs.CoreV1().ConfigMaps("podstep-fleet").List(context.Background(), metav1.ListOptions{})
	if len(pods.Items)+len(cms.Items) != 0 {
		t.Errorf("left: %d pods, %d ConfigMaps", len(pods.Items), len(cms.Items))
	}
	if out.Deleted.Pods != 2 || out.Deleted.ConfigMaps != 2 || out.Deleted.Parents != 1 {
		t.Errorf("deleted %+v", out.Deleted)
	}
	if n := strings.Count(progress.String(), "runner not started"); n != 2 {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// The header warns once about the nodes that replay on their kubelet's
// runtime; an annotated node replays on its own; a bad annotation is that
// node's error, and no runner is made for it.
func TestRunReplayEndpointAnnotation(t *testing.T) {
	node := func(name, ann string) runtime.Object {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if ann != "" {
			n.Annotations = map[string]string{AnnotationReplayEndpoint: ann}
		}
		return n
	}
	cs := fake.NewClientset(node("a", "unix:///var/lib/replay/containerd.sock"), node("b", ""), node("c", ""), node("d", "tcp://x:1"))
	out, progress := runHello(t, cs, Options{Timeout: 200 * time.Millisecond, Concurrency: 4})
	p := progress.String()
	if n := strings.Count(p, "HandlePodCleanups"); n != 1 || !strings.Contains(p, "2 node(s) replay on their kubelet's own runtime (b, c)") ||
		!strings.Contains(p, AnnotationReplayEndpoint+"=unix:///PATH") {
		t.Errorf("want one warning naming b, c (d has an annotation, a bad one) and the annotation:\n%s", p)
	}
	got := map[string]*Result{}
	for _, r := range out.Results {
		got[r.Node] = r
	}
	if r := got["a"]; r.Endpoint != "unix:///var/lib/replay/containerd.sock" || r.EndpointFrom != FromAnnotation {
		t.Errorf("a: %s (%s)", r.Endpoint, r.EndpointFrom)
	}
	if r := got["b"]; r.Endpoint != DefaultEndpoint || r.EndpointFrom != FromDefault {
		t.Errorf("b: %s (%s)", r.Endpoint, r.EndpointFrom)
	}
	if r := got["d"]; r.Status != Failed || !strings.Contains(r.Error, `annotation podstep.dev/replay-endpoint="tcp://x:1"`) {
		t.Errorf("d: %s %q", r.Status, r.Error)
	}
	if out.Deleted.Pods != 3 {
		t.Errorf("deleted %+v: runners for a, b, c only", out.Deleted)
	}

	// -r for every node: no warning
	_, progress = runHello(t, cs, Options{Timeout: 100 * time.Millisecond, Endpoint: "unix:///run/x.sock", Nodes: []string{"b"}})
	if strings.Contains(progress.String(), "HandlePodCleanups") {
		t.Errorf("warning with -r:\n%s", progress.String())
	}
}

// TestRunnerCannotStart: a runner whose container waits on an error no
// retry clears (the host dir not on a shared mount, the image absent with
// pull policy Never, ...) is reported at once with the runtime's words and
// the way out, not after --timeout (it waited the whole 3 minutes, issue
// 37); the errors that clear on the kubelet's next try are waited on.
func TestRunnerCannotStart(t *testing.T) {
	const shared = `failed to generate container spec: path "/var/lib/podstep-fleet" is mounted on "/" but it is not a shared mount`
	for _, tc := range []struct {
		reason, message string
		want            string // "": waited on until --timeout
	}{
		{"CreateContainerError", shared, "the runner cannot start: CreateContainerError: " + shared + " (the host dir must be on a shared mount: on the node, mount --bind /var/lib/podstep-fleet /var/lib/podstep-fleet && mount --make-shared /var/lib/podstep-fleet"},
		{"ErrImageNeverPull", `Container image "podstep:dev" is not present with pull policy of Never`, "the runner cannot start: ErrImageNeverPull: Container image \"podstep:dev\" is not present with pull policy of Never (--image names the runner image"},
		{"InvalidImageName", `Failed to apply default image tag "Podstep": couldn't parse image name`, "the runner cannot start: InvalidImageName"},
		{"CreateContainerConfigError", `secret "x" not found`, "the runner cannot start: CreateContainerConfigError"},
		{"CreateContainerError", "context deadline exceeded", ""},
		{"CreateContainerError", `failed to reserve container name "podstep_r": name "podstep_r" is reserved for "abc"`, ""},
		{"ContainerCreating", "", ""},
		{"ErrImagePull", "dial tcp: i/o timeout", ""},
	} {
		t.Run(tc.reason+"/"+tc.message, func(t *testing.T) {
			p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "podstep", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: tc.reason, Message: tc.message}}}}}}
			got := cannotStart(p, "/var/lib/podstep-fleet")
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) {
				t.Errorf("cannotStart = %q, want prefix %q", got, tc.want)
			}
		})
	}

	// The whole run: the kubelet (the fake's reactor) sets the waiting
	// state; the run ends NotStarted with the reason, well before a
	// minute's --timeout would have said "no runner started within 1m0s".
	// (A node with no Ready condition: a Ready one's configz is read
	// through a REST client the fake has not.)
	cs := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}})
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "podstep",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerError", Message: shared}}}}}
		return false, nil, nil
	})
	out, _ := runHello(t, cs, Options{Timeout: time.Minute, Concurrency: 1, HostDir: "/var/lib/podstep-fleet"})
	if len(out.Results) != 1 || out.Results[0].Status != NotStarted || !strings.HasPrefix(out.Results[0].Error, "the runner cannot start: CreateContainerError") || strings.Contains(out.Results[0].Error, "within") {
		t.Fatalf("results: %+v", out.Results)
	}
}

// runHello runs the fleet of testdata/pods/hello.yaml through the fake
// clientset cs with o (its pod, namespace, image, progress and pod name
// filled in) and returns the outcome and the progress written.
func runHello(t *testing.T, cs *fake.Clientset, o Options) (*Outcome, *bytes.Buffer) {
	t.Helper()
	b, err := manifest.Load("../../testdata/pods/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	o.Pod, o.Namespace, o.Image, o.Progress, o.PodName = b.Pod, "podstep-fleet", "img", &progress, "default/hello"
	out, err := Run(context.Background(), &Client{API: kubefake.New(cs), Server: "fake", bySec: map[int64]int{}}, o)
	if err != nil {
		t.Fatal(err)
	}
	return out, &progress
}

package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/podstep/podstep/internal/cluster/kubefake"
	"github.com/podstep/podstep/internal/workload"
)

// replica is a pod of the web Deployment in namespace app.
func replica(name, node string, phase corev1.PodPhase, readyAt time.Time, restarts int32, created time.Time) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "app", Labels: map[string]string{"app": "web"}, CreationTimestamp: metav1.NewTime(created)},
		Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{Name: "c", RestartCount: restarts}}},
	}
	if !readyAt.IsZero() {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(readyAt)}}
	}
	return p
}

// TestPodOf: --pod KIND/NAME is one of the workload's pods, the one
// `kubectl logs KIND/NAME` picks (podutils.ByLogging).
func TestPodOf(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}}
	objs := []runtime.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "app"}, Spec: appsv1.DeploymentSpec{Selector: sel, Template: tmpl}},
		&appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "app"}, Spec: appsv1.StatefulSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}},
		&corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: "app"}, Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "web"}}},
		&batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "app"}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1", Namespace: "app", CreationTimestamp: metav1.NewTime(t0),
			OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "nightly", Controller: ptr(true)}}},
			Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "1"}}}},
		&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "nightly-2", Namespace: "app", CreationTimestamp: metav1.NewTime(t0.Add(time.Hour)),
			OwnerReferences: []metav1.OwnerReference{{Kind: "CronJob", Name: "nightly", Controller: ptr(true)}}},
			Spec: batchv1.JobSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"job": "2"}}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nightly-1-a", Namespace: "app", Labels: map[string]string{"job": "1"}}},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "nightly-2-a", Namespace: "app", Labels: map[string]string{"job": "2"}}},
		// The web replicas: pending, unassigned, ready later, and the one kubectl picks.
		replica("web-pending", "node-a", corev1.PodPending, time.Time{}, 0, t0),
		replica("web-unassigned", "", corev1.PodRunning, t0, 9, t0),
		replica("web-ready-late", "node-a", corev1.PodRunning, t0.Add(time.Hour), 9, t0),
		replica("web-ready-early", "node-b", corev1.PodRunning, t0, 0, t0.Add(time.Hour)),
		replica("web-not-ready", "node-a", corev1.PodRunning, time.Time{}, 5, t0),
		// Another namespace's pod with the same labels is not a candidate.
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-other-ns", Namespace: "other", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
	}
	c := &Client{API: kubefake.New(fake.NewClientset(objs...)), Server: "https://api.test", Namespace: "app"}
	for _, tc := range []struct {
		kind, name, want, notFound string
	}{
		{workload.KindPod, "anything", "anything", ""},
		{workload.KindDeployment, "web", "web-ready-early", ""},
		{workload.KindReplicationController, "old", "web-ready-early", ""},
		{workload.KindCronJob, "nightly", "nightly-2-a", ""},
		{workload.KindStatefulSet, "db", "", `pod of statefulset/db in namespace "app" (selector app=db)`},
		{workload.KindDeployment, "absent", "", `deployment/absent in namespace "app"`},
	} {
		t.Run(tc.kind+"/"+tc.name, func(t *testing.T) {
			got, err := c.PodOf(context.Background(), "", tc.kind, tc.name)
			if tc.notFound != "" {
				var nf *NotFoundError
				if !errors.As(err, &nf) || !strings.Contains(err.Error(), tc.notFound) {
					t.Fatalf("err = %v, want a NotFoundError naming %s", err, tc.notFound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want {
				t.Errorf("pod = %s, want %s (%s)", got.Name, tc.want, got.Why)
			}
			if tc.kind != workload.KindPod && !strings.Contains(got.Why, "kubectl logs") {
				t.Errorf("why = %q: want how it was chosen", got.Why)
			}
		})
	}
}

// TestByLogging: each of kubectl's rules, in order, decides alone.
func TestByLogging(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	p := func(mut func(*corev1.Pod)) *corev1.Pod {
		x := replica("x", "n", corev1.PodRunning, t0, 0, t0)
		mut(x)
		return x
	}
	sidecar := func(restarts int32) func(*corev1.Pod) {
		return func(x *corev1.Pod) {
			x.Spec.InitContainers = []corev1.Container{{Name: "s", RestartPolicy: ptr(corev1.ContainerRestartPolicyAlways)}}
			x.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "s", RestartCount: restarts}}
		}
	}
	for _, tc := range []struct {
		rule        string
		first, then *corev1.Pod
	}{
		{"assigned first", p(func(*corev1.Pod) {}), p(func(x *corev1.Pod) { x.Spec.NodeName = "" })},
		{"Running before Pending", p(func(*corev1.Pod) {}), p(func(x *corev1.Pod) { x.Status.Phase = corev1.PodPending })},
		{"Unknown before Pending", p(func(x *corev1.Pod) { x.Status.Phase = corev1.PodUnknown }), p(func(x *corev1.Pod) { x.Status.Phase = corev1.PodPending })},
		{"Ready first", p(func(*corev1.Pod) {}), p(func(x *corev1.Pod) { x.Status.Conditions = nil })},
		{"Ready longer first", p(func(*corev1.Pod) {}), p(func(x *corev1.Pod) { x.Status.Conditions[0].LastTransitionTime = metav1.NewTime(t0.Add(time.Minute)) })},
		{"more restarts first", p(func(x *corev1.Pod) { x.Status.ContainerStatuses[0].RestartCount = 2 }), p(func(*corev1.Pod) {})},
		{"then sidecar restarts", p(sidecar(3)), p(sidecar(1))},
		{"older first", p(func(*corev1.Pod) {}), p(func(x *corev1.Pod) { x.CreationTimestamp = metav1.NewTime(t0.Add(time.Second)) })},
	} {
		if !byLogging(tc.first, tc.then) || byLogging(tc.then, tc.first) {
			t.Errorf("%s: order not kept", tc.rule)
		}
	}
}

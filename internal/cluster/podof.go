package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/cluster/kube"
	"github.com/podstep/podstep/internal/workload"
)

// Chosen is the pod PodOf picked for a workload: its name and how it was
// chosen, for the run's first lines.
type Chosen struct {
	Name string
	// Why says which pod of how many, and by what rule.
	Why string
}

// PodOf finds the pod that `--pod KIND/NAME` means in namespace ns ("" is
// the context's): a Pod by its name; for a Deployment, ReplicaSet,
// StatefulSet, DaemonSet, ReplicationController or Job, one of the pods its
// selector matches, chosen as `kubectl logs KIND/NAME` chooses
// (GetFirstPod with podutils.ByLogging, k8s.io/kubectl
// pkg/polymorphichelpers/helpers.go and pkg/util/podutils/podutils.go:
// assigned to a node first, then Running, Unknown, Pending, then Ready, then
// Ready for longer, then the most restarts of a regular container, then of a sidecar, then
// the oldest); for a
// CronJob, the same among the pods of its newest Job. No pod: a
// *NotFoundError (exit 2) naming the selector. (get KIND, list pods)
func (c *Client) PodOf(ctx context.Context, ns, kind, name string) (Chosen, error) {
	if ns == "" {
		ns = c.Namespace
	}
	what := strings.ToLower(kind) + "/" + name
	var sel *metav1.LabelSelector
	var err error
	switch kind {
	case workload.KindPod:
		return Chosen{Name: name}, nil
	case workload.KindDeployment:
		var d *appsv1.Deployment
		if d, err = kube.Get[appsv1.Deployment](ctx, c.API, kube.Deployments, ns, name); err == nil {
			sel = d.Spec.Selector
		}
	case workload.KindReplicaSet:
		var r *appsv1.ReplicaSet
		if r, err = kube.Get[appsv1.ReplicaSet](ctx, c.API, kube.ReplicaSets, ns, name); err == nil {
			sel = r.Spec.Selector
		}
	case workload.KindStatefulSet:
		var s *appsv1.StatefulSet
		if s, err = kube.Get[appsv1.StatefulSet](ctx, c.API, kube.StatefulSets, ns, name); err == nil {
			sel = s.Spec.Selector
		}
	case workload.KindDaemonSet:
		var d *appsv1.DaemonSet
		if d, err = kube.Get[appsv1.DaemonSet](ctx, c.API, kube.DaemonSets, ns, name); err == nil {
			sel = d.Spec.Selector
		}
	case workload.KindReplicationController:
		var r *corev1.ReplicationController
		if r, err = kube.Get[corev1.ReplicationController](ctx, c.API, kube.ReplicationControllers, ns, name); err == nil {
			sel = &metav1.LabelSelector{MatchLabels: r.Spec.Selector}
		}
	case workload.KindJob:
		var j *batchv1.Job
		if j, err = kube.Get[batchv1.Job](ctx, c.API, kube.Jobs, ns, name); err == nil {
			sel = j.Spec.Selector
		}
	case workload.KindCronJob:
		return c.cronJobPod(ctx, ns, name)
	default:
		return Chosen{}, fmt.Errorf("--pod %s: podstep cannot find the pods of a %s", what, kind)
	}
	if apierrors.IsNotFound(err) {
		return Chosen{}, &NotFoundError{Server: c.Server, What: fmt.Sprintf("%s in namespace %q", what, ns)}
	}
	if err != nil {
		return Chosen{}, c.classify(err, "get", resourceOf(kind), ns, name)
	}
	return c.firstPod(ctx, ns, what, sel)
}

// cronJobPod: the pods of the CronJob's newest Job (its controller
// ownerReference names the CronJob).
func (c *Client) cronJobPod(ctx context.Context, ns, name string) (Chosen, error) {
	what := "cronjob/" + name
	if _, err := kube.Get[batchv1.CronJob](ctx, c.API, kube.CronJobs, ns, name); apierrors.IsNotFound(err) {
		return Chosen{}, &NotFoundError{Server: c.Server, What: fmt.Sprintf("%s in namespace %q", what, ns)}
	} else if err != nil {
		return Chosen{}, c.classify(err, "get", "cronjobs", ns, name)
	}
	jobs, err := kube.List[batchv1.JobList](ctx, c.API, kube.Jobs, ns, metav1.ListOptions{})
	if err != nil {
		return Chosen{}, c.classify(err, "list", "jobs", ns, "")
	}
	var newest *batchv1.Job
	for i := range jobs.Items {
		j := &jobs.Items[i]
		if ref := metav1.GetControllerOf(j); ref != nil && ref.Kind == workload.KindCronJob && ref.Name == name {
			if newest == nil || newest.CreationTimestamp.Before(&j.CreationTimestamp) {
				newest = j
			}
		}
	}
	if newest == nil {
		return Chosen{}, &NotFoundError{Server: c.Server, What: fmt.Sprintf("Job of %s in namespace %q (it has not run yet: `podstep run -f` on the CronJob's manifest shows the pod its next Job would make)", what, ns)}
	}
	ch, err := c.firstPod(ctx, ns, what+" (its newest Job "+newest.Name+")", newest.Spec.Selector)
	return ch, err
}

// firstPod lists the pods sel matches and picks one (byLogging).
func (c *Client) firstPod(ctx context.Context, ns, what string, sel *metav1.LabelSelector) (Chosen, error) {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || sel == nil || s.Empty() {
		return Chosen{}, fmt.Errorf("--pod %s: its selector %v selects no pod: %v", what, sel, err)
	}
	list, err := kube.List[corev1.PodList](ctx, c.API, kube.Pods, ns, metav1.ListOptions{LabelSelector: s.String()})
	if err != nil {
		return Chosen{}, c.classify(err, "list", "pods", ns, "")
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	if len(pods) == 0 {
		return Chosen{}, &NotFoundError{Server: c.Server, What: fmt.Sprintf("pod of %s in namespace %q (selector %s)", what, ns, s)}
	}
	sort.SliceStable(pods, func(i, j int) bool { return byLogging(pods[i], pods[j]) })
	p := pods[0]
	state := string(p.Status.Phase)
	if ready(p) {
		state += " and Ready"
	}
	return Chosen{Name: p.Name, Why: fmt.Sprintf("%s: pod %s, 1 of %d its selector %s matches (%s), chosen as `kubectl logs %s` chooses: on a node, Running, Ready, Ready longest, most restarts, oldest",
		what, p.Name, len(pods), s, state, what)}, nil
}

// byLogging orders pods as kubectl's podutils.ByLogging: a pod on a node
// before one that is not; Running, then Unknown, then Pending (others
// last); Ready before not; Ready for longer first; more restarts of a
// regular container, then of a sidecar, first; older first.
func byLogging(a, b *corev1.Pod) bool {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName != ""
	}
	rank := func(p corev1.PodPhase) int {
		switch p {
		case corev1.PodRunning:
			return 0
		case corev1.PodUnknown:
			return 1
		case corev1.PodPending:
			return 2
		}
		return 0 // as kubectl's map lookup: a phase it does not list counts as Running
	}
	if ra, rb := rank(a.Status.Phase), rank(b.Status.Phase); ra != rb {
		return ra < rb
	}
	if ready(a) != ready(b) {
		return ready(a)
	}
	if ready(a) {
		ta, tb := readySince(a), readySince(b)
		if !ta.Equal(tb) {
			return earlierOrSet(ta, tb)
		}
	}
	ra, sa := maxRestarts(a)
	rb, sb := maxRestarts(b)
	if ra != rb {
		return ra > rb
	}
	if sa != sb {
		return sa > sb
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return earlierOrSet(a.CreationTimestamp.Time, b.CreationTimestamp.Time)
	}
	return false
}

// earlierOrSet: a before b, a zero time last.
func earlierOrSet(a, b time.Time) bool {
	if a.IsZero() || b.IsZero() {
		return !a.IsZero()
	}
	return a.Before(b)
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func readySince(p *corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// maxRestarts is the largest restart count of the pod's regular
// containers, and of its sidecars (init containers of restartPolicy Always).
func maxRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, s := range p.Status.ContainerStatuses {
		regular = max(regular, s.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, s := range p.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			sidecar = max(sidecar, s.RestartCount)
		}
	}
	return regular, sidecar
}

func resourceOf(kind string) string { return strings.ToLower(kind) + "s" }

package cluster

import (
	"context"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podstep/podstep/internal/cluster/kube"
)

// View reads what the cluster says about pod ns/name now: the pod (get
// pods) and its Events, listed with fieldSelector involvedObject.uid (list
// events), oldest first. The error is an *AccessError or *UnreachableError
// (the view is then nil); redact masks every text (the engine's redactor).
func (c *Client) View(ctx context.Context, ns, name string, replayUID types.UID, redact func(string) string) (*PodView, error) {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	t := func(s string) string { return redact(clean(s)) }
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	pod, err := kube.Get[corev1.Pod](ctx, c.API, kube.Pods, ns, name)
	if err != nil {
		return nil, c.classify(err, "get", "pods", ns, name)
	}
	v := &PodView{
		Server: c.Server, Pod: ns + "/" + name, UID: string(pod.UID), ReplayUID: string(replayUID),
		ResourceVersion: pod.ResourceVersion, Node: pod.Spec.NodeName,
		Phase: string(pod.Status.Phase), Reason: t(pod.Status.Reason), Message: t(pod.Status.Message),
		Events: []Event{},
	}
	add := func(specs []corev1.Container, statuses []corev1.ContainerStatus, init bool) {
		by := map[string]corev1.ContainerStatus{}
		for _, s := range statuses {
			by[s.Name] = s
		}
		for _, sc := range specs {
			cc := ContainerStatus{Name: sc.Name, Init: init}
			if s, ok := by[sc.Name]; ok {
				cc.Ready, cc.Restarts = s.Ready, s.RestartCount
				switch {
				case s.State.Waiting != nil:
					cc.State, cc.Reason, cc.Message = "waiting", t(s.State.Waiting.Reason), t(s.State.Waiting.Message)
				case s.State.Running != nil:
					cc.State = "running"
				case s.State.Terminated != nil:
					x := s.State.Terminated.ExitCode
					cc.State, cc.Reason, cc.Message, cc.ExitCode = "terminated", t(s.State.Terminated.Reason), t(s.State.Terminated.Message), &x
				}
			}
			v.Containers = append(v.Containers, cc)
		}
	}
	add(pod.Spec.InitContainers, pod.Status.InitContainerStatuses, true)
	add(pod.Spec.Containers, pod.Status.ContainerStatuses, false)

	sel := fields.OneTermEqualSelector("involvedObject.uid", string(pod.UID)).String()
	evs, err := kube.List[corev1.EventList](ctx, c.API, kube.Events, ns, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, c.classify(err, "list", "events", ns, "fieldSelector "+sel)
	}
	items := evs.Items
	sort.SliceStable(items, func(i, j int) bool { return eventTime(&items[i]).Before(eventTime(&items[j])) })
	for i := range items {
		e := &items[i]
		src := e.Source.Component
		if src == "" {
			src = e.ReportingController
		}
		if h := e.Source.Host; h != "" {
			src += " " + h
		} else if e.ReportingInstance != "" && !strings.Contains(src, e.ReportingInstance) {
			src += " " + e.ReportingInstance
		}
		count := e.Count
		if e.Series != nil && e.Series.Count > count {
			count = e.Series.Count
		}
		last := ""
		if tm := eventTime(e); !tm.IsZero() {
			last = tm.UTC().Format(time.RFC3339)
		}
		v.Events = append(v.Events, Event{Type: t(e.Type), Reason: t(e.Reason), Message: t(e.Message), Source: t(src), Count: count, Last: last})
	}
	return v, nil
}

// eventTime is when an Event was last seen, whichever API wrote it.
func eventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

package podstate

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Change is one thing that differs between two snapshots of the pod: a
// `kubectl get pod` column or a field of the pod status, named by a stable
// path, with its value before and after as text ("" when absent).
type Change struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Field paths of the pod-level changes Diff reports. Container fields are
// built by containerField.
const (
	FieldStatus   = "status"   // the STATUS column
	FieldReady    = "ready"    // the READY column
	FieldRestarts = "restarts" // the RESTARTS column
	FieldPhase    = "status.phase"
	FieldReason   = "status.reason"
	FieldHostIP   = "status.hostIP"
	FieldPodIP    = "status.podIP"

	conditionsPrefix = "status.conditions["
	initPrefix       = "status.initContainerStatuses["
	regularPrefix    = "status.containerStatuses["
)

// Diff says what changed from prev to next, in this order (the field names
// are stable: frontends and JSON consumers rely on them):
//
//	status                                      the STATUS column (printPod), e.g. ContainerCreating → Running
//	ready                                       the READY column, e.g. 0/1 → 1/1
//	restarts                                    the RESTARTS column, e.g. 0 → 1
//	status.phase                                Pending, Running, Succeeded, Failed
//	status.reason                               e.g. OutOfcpu for a rejected pod
//	status.hostIP                               set when the node admits the pod
//	status.podIP                                set when the sandbox has its network
//	status.conditions[<Type>].status            True, False; "" when absent
//	status.initContainerStatuses[<name>].state  then .ready, .started, .restartCount
//	status.containerStatuses[<name>].state      then .ready, .started, .restartCount
//
// Conditions come in next's order (the order generateAPIPodStatus appends
// them), then those only prev has. A condition missing from a snapshot
// counts as "": the Tracker reports all five kubelet conditions in every
// snapshot except a rejected pod's, which has none, so "" shows only there
// (and when prev is the zero Snapshot).
//
// Containers come init containers first, each list in next's order, then
// those only prev has; each container's fields in the order state, ready,
// started, restartCount. A state reads as `kubectl describe pod` says it:
// "waiting ContainerCreating", "running", "terminated Completed (exit 0)",
// "terminated Error (exit 137, signal 9)"; "" for no state. Only the kind,
// reason, exit code and signal count: a new waiting message or start time
// alone is no change. ready and started are "true" or "false", restartCount
// a number. A container missing from a snapshot counts as a zero status (no
// state, not ready, not started, 0 restarts), so one that disappears (a
// rejected pod has no container statuses) shows only the fields that were
// set.
//
// Diff returns nil when nothing changed. It does not allocate then: it runs
// once per step, on the engine's goroutine.
func Diff(prev, next Snapshot) []Change {
	out := diffPod(nil, &prev, &next)
	p, n := &prev.Status, &next.Status
	out = diffContainers(out, initPrefix, p.InitContainerStatuses, n.InitContainerStatuses)
	out = diffContainers(out, regularPrefix, p.ContainerStatuses, n.ContainerStatuses)
	return out
}

// diffPod adds to out the pod-level changes Diff reports: the columns,
// phase, reason, IPs and conditions.
func diffPod(out []Change, prev, next *Snapshot) []Change {
	add := func(field, from, to string) {
		if from != to {
			out = append(out, Change{Field: field, From: from, To: to})
		}
	}
	add(FieldStatus, prev.Display, next.Display)
	add(FieldReady, prev.Ready, next.Ready)
	if prev.Restarts != next.Restarts {
		add(FieldRestarts, itoa(prev.Restarts), itoa(next.Restarts))
	}
	p, n := &prev.Status, &next.Status
	add(FieldPhase, string(p.Phase), string(n.Phase))
	add(FieldReason, p.Reason, n.Reason)
	add(FieldHostIP, p.HostIP, n.HostIP)
	add(FieldPodIP, p.PodIP, n.PodIP)
	return diffConditions(out, p.Conditions, n.Conditions)
}

func diffConditions(out []Change, prev, next []corev1.PodCondition) []Change {
	for i := range next {
		from := ""
		if c := findCondition(prev, i, next[i].Type); c != nil {
			from = string(c.Status)
		}
		if to := string(next[i].Status); from != to {
			out = append(out, Change{Field: conditionField(next[i].Type), From: from, To: to})
		}
	}
	for i := range prev {
		if findCondition(next, i, prev[i].Type) == nil && prev[i].Status != "" {
			out = append(out, Change{Field: conditionField(prev[i].Type), From: string(prev[i].Status)})
		}
	}
	return out
}

// findCondition is the condition of type typ in conds, looked up at index
// hint first: both snapshots list conditions in the same order.
func findCondition(conds []corev1.PodCondition, hint int, typ corev1.PodConditionType) *corev1.PodCondition {
	if hint < len(conds) && conds[hint].Type == typ {
		return &conds[hint]
	}
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func conditionField(typ corev1.PodConditionType) string {
	return conditionsPrefix + string(typ) + "].status"
}

var zeroStatus corev1.ContainerStatus

func diffContainers(out []Change, prefix string, prev, next []corev1.ContainerStatus) []Change {
	for i := range next {
		p := findStatus(prev, i, next[i].Name)
		if p == nil {
			p = &zeroStatus
		}
		out = diffContainer(out, prefix, next[i].Name, p, &next[i])
	}
	for i := range prev {
		if findStatus(next, i, prev[i].Name) == nil {
			out = diffContainer(out, prefix, prev[i].Name, &prev[i], &zeroStatus)
		}
	}
	return out
}

// findStatus is the status of container name, looked up at index hint
// first: both snapshots list containers in the same order.
func findStatus(statuses []corev1.ContainerStatus, hint int, name string) *corev1.ContainerStatus {
	if hint < len(statuses) && statuses[hint].Name == name {
		return &statuses[hint]
	}
	return statusOf(statuses, name)
}

func diffContainer(out []Change, prefix, name string, p, n *corev1.ContainerStatus) []Change {
	if !sameState(&p.State, &n.State) {
		out = append(out, Change{Field: containerField(prefix, name, "state"), From: StateString(p.State), To: StateString(n.State)})
	}
	if p.Ready != n.Ready {
		out = append(out, Change{Field: containerField(prefix, name, "ready"), From: strconv.FormatBool(p.Ready), To: strconv.FormatBool(n.Ready)})
	}
	if ps, ns := isStarted(p), isStarted(n); ps != ns {
		out = append(out, Change{Field: containerField(prefix, name, "started"), From: strconv.FormatBool(ps), To: strconv.FormatBool(ns)})
	}
	if p.RestartCount != n.RestartCount {
		out = append(out, Change{Field: containerField(prefix, name, "restartCount"), From: itoa(p.RestartCount), To: itoa(n.RestartCount)})
	}
	return out
}

func containerField(prefix, name, sub string) string {
	return prefix + name + "]." + sub
}

// sameState says whether two states read the same in StateString, without
// building the strings.
func sameState(a, b *corev1.ContainerState) bool {
	switch {
	case a.Waiting != nil || b.Waiting != nil:
		return a.Waiting != nil && b.Waiting != nil && a.Waiting.Reason == b.Waiting.Reason
	case a.Running != nil || b.Running != nil:
		return a.Running != nil && b.Running != nil
	case a.Terminated != nil || b.Terminated != nil:
		x, y := a.Terminated, b.Terminated
		return x != nil && y != nil && x.Reason == y.Reason && x.ExitCode == y.ExitCode && x.Signal == y.Signal
	}
	return true
}

// StateString says a container state as `kubectl describe pod` does, on
// one line: "waiting ContainerCreating", "running", "terminated Completed
// (exit 0)", "terminated Error (exit 137, signal 9)"; "" for no state. A
// state with more than one kind set reads as the first of waiting, running,
// terminated, as describe checks them.
func StateString(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return strings.TrimSpace("waiting " + s.Waiting.Reason)
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		t := s.Terminated
		var b strings.Builder
		b.WriteString("terminated ")
		if t.Reason != "" {
			b.WriteString(t.Reason)
			b.WriteByte(' ')
		}
		b.WriteString("(exit ")
		b.WriteString(itoa(t.ExitCode))
		if t.Signal != 0 {
			b.WriteString(", signal ")
			b.WriteString(itoa(t.Signal))
		}
		b.WriteByte(')')
		return b.String()
	}
	return ""
}

func itoa(n int32) string { return strconv.FormatInt(int64(n), 10) }

// Container is the name of the container the change is about, and whether
// it is an init container; "" for a pod-level change.
func (c Change) Container() (name string, init bool) {
	for _, prefix := range []string{initPrefix, regularPrefix} {
		if rest, ok := strings.CutPrefix(c.Field, prefix); ok {
			if i := strings.LastIndex(rest, "]."); i > 0 {
				return rest[:i], prefix == initPrefix
			}
		}
	}
	return "", false
}

// Condition is the type of the condition the change is about; "" for
// other changes.
func (c Change) Condition() string {
	if rest, ok := strings.CutPrefix(c.Field, conditionsPrefix); ok {
		if typ, ok := strings.CutSuffix(rest, "].status"); ok {
			return typ
		}
	}
	return ""
}

// containerAttr is the attribute of a container change (state, ready,
// started, restartCount); "" for other changes.
func (c Change) containerAttr() string {
	if name, _ := c.Container(); name != "" {
		return c.Field[strings.LastIndex(c.Field, "].")+2:]
	}
	return ""
}

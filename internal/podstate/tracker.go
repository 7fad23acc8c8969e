package podstate

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/gate"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/restart"
)

// Event is one kubelet event (what `kubectl describe pod` lists).
type Event struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`   // Normal or Warning
	Reason  string    `json:"reason"` // e.g. Pulled, Created, Started, Failed
	Object  string    `json:"object"` // e.g. spec.containers{app}
	Message string    `json:"message"`
}

// Snapshot is the pod's state at one moment: what frontends show.
type Snapshot struct {
	// Status is the pod status as the kubelet would write it to the API.
	Status corev1.PodStatus `json:"status"`
	// Display is the STATUS column of `kubectl get pod`.
	Display string `json:"display"`
	// Ready is the READY column, e.g. "1/2".
	Ready string `json:"ready"`
	// Restarts is the RESTARTS column.
	Restarts int32 `json:"restarts"`
	// Events are all events recorded so far, oldest first. The list is
	// the Tracker's, shared by every snapshot (it only ever appends):
	// read it, do not change its events.
	Events []Event `json:"events"`
}

// Tracker accumulates what happened to one pod and derives its status.
// It is safe for concurrent use.
type Tracker struct {
	mu     sync.Mutex
	pod    *corev1.Pod
	now    func() time.Time
	status corev1.PodStatus
	events []Event
	// sandboxReady is the PodReadyToStartContainers fact.
	sandboxReady bool
	// transitions remembers when each condition last changed.
	transitions map[corev1.PodConditionType]condState
	// rejected is set by Rejected: the status is rejectPod's, not one
	// generateAPIPodStatus derives.
	rejected bool
	// unadmitted: the node has not admitted the pod yet (NotAdmitted):
	// the kubelet has written no status for it, and kubectl's STATUS is
	// the phase, Pending.
	unadmitted bool
	// gates are the kubelet's feature gates (SetGates); the zero value is
	// v1.37's defaults.
	gates gate.Gates
	// anyRestartAll is restart.AnyRestartAll of the pod under gates, found
	// once (New, SetGates): the conditions of every step need it, and a
	// walk of the spec per step made a run quadratic in its containers.
	anyRestartAll bool
	// restartingAll is the AllContainersRestarting fact (RestartingAll).
	restartingAll bool
	// redact masks secrets in the messages recorded (nil: none).
	redact func(string) string

	// The containers by name, made once by New so that no lookup walks the
	// pod (a walk per container per step made a run quadratic in the
	// containers, issue 34): each one's spec, whether it is an init
	// container, and its index in status.InitContainerStatuses or
	// status.ContainerStatuses.
	specs     map[string]*corev1.Container
	inits     map[string]bool
	initAt    map[string]int
	regularAt map[string]int
	// sortedAt is, for each regular container of the spec, the index of
	// its status in status.ContainerStatuses, which are kept sorted by
	// name, the order of a snapshot's.
	sortedAt []int

	// mark is the pod as StepChanges last saw it (New's at first), for the
	// next step's changes: its columns, phase, reason, IPs and conditions.
	mark Snapshot
	// markEvents is how many events there were then.
	markEvents int
	// before holds, for each container changed since, its status then, by
	// its key (initKey, regularKey); touched lists the keys in the order
	// first changed.
	before  map[int]corev1.ContainerStatus
	touched []int
}

// initKey and regularKey are the keys of a container's status in before:
// init containers first, then the others, each by its status's index.
func initKey(i int) int                 { return i }
func (t *Tracker) regularKey(i int) int { return len(t.pod.Spec.InitContainers) + i }

type condState struct {
	status corev1.ConditionStatus
	at     metav1.Time
}

// SetGates sets the kubelet's feature gates, which change how the phase is
// computed (ContainerRestartRules). Call it before the first event.
func (t *Tracker) SetGates(g gate.Gates) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gates = g
	t.anyRestartAll = restart.AnyRestartAll(&t.pod.Spec, g)
}

// RestartingAll records that a container exited with a matching
// RestartAllContainers rule: the AllContainersRestarting condition turns
// True (ShouldAllContainersRestart, pkg/kubelet/container/helpers.go).
func (t *Tracker) RestartingAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.restartingAll = true
}

// New starts tracking pod; now is the clock (nil = time.Now).
func New(pod *corev1.Pod, now func() time.Time) *Tracker {
	if now == nil {
		now = time.Now
	}
	t := &Tracker{pod: pod, now: now, transitions: map[corev1.PodConditionType]condState{}}
	t.anyRestartAll = restart.AnyRestartAll(&pod.Spec, t.gates)
	t.status.Phase = corev1.PodPending
	nInit, nReg := len(pod.Spec.InitContainers), len(pod.Spec.Containers)
	t.specs = make(map[string]*corev1.Container, nInit+nReg)
	t.inits, t.initAt = make(map[string]bool, nInit), make(map[string]int, nInit)
	t.regularAt = make(map[string]int, nReg)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		t.status.InitContainerStatuses = append(t.status.InitContainerStatuses, newStatus(*c, reason.PodInitializing))
		if _, seen := t.specs[c.Name]; !seen {
			t.specs[c.Name], t.inits[c.Name], t.initAt[c.Name] = c, true, i
		}
	}
	regular := reason.ContainerCreating
	if len(pod.Spec.InitContainers) > 0 {
		regular = reason.PodInitializing
	}
	// The regular containers' statuses are kept in the order of their
	// names, as the status manager's normalizeStatus sorts them.
	byName := make([]int, nReg)
	for i := range byName {
		byName[i] = i
	}
	sort.SliceStable(byName, func(i, j int) bool {
		return pod.Spec.Containers[byName[i]].Name < pod.Spec.Containers[byName[j]].Name
	})
	t.sortedAt = make([]int, nReg)
	for at, i := range byName {
		c := &pod.Spec.Containers[i]
		t.sortedAt[i] = at
		t.status.ContainerStatuses = append(t.status.ContainerStatuses, newStatus(*c, regular))
		if _, seen := t.regularAt[c.Name]; !seen {
			t.regularAt[c.Name] = at
		}
	}
	for i := range pod.Spec.Containers {
		if c := &pod.Spec.Containers[i]; t.specs[c.Name] == nil {
			t.specs[c.Name] = c
		}
	}
	t.before = map[int]corev1.ContainerStatus{}
	// convertToAPIContainerStatuses (pkg/kubelet/kubelet_pods.go) gives every
	// container without a runtime status one default waiting reason:
	// PodInitializing when the pod has init containers (for the init
	// containers too, so kubectl shows Init:0/N), ContainerCreating otherwise.
	t.status.QOSClass = podcfg.QOSClass(pod)
	return t
}

func newStatus(c corev1.Container, reason string) corev1.ContainerStatus {
	f := false
	return corev1.ContainerStatus{
		Name:    c.Name,
		Image:   c.Image,
		Started: &f,
		State:   corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
	}
}

// SetRedact makes the tracker pass every message it records (events,
// container waiting and terminated messages, the pod's message) through fn,
// which masks secrets: they are stored masked, so every snapshot is.
func (t *Tracker) SetRedact(fn func(string) string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.redact = fn
}

// cleanHeld masks secrets in a message to record; t.mu is held.
func (t *Tracker) cleanHeld(s string) string {
	if t.redact == nil || s == "" {
		return s
	}
	return t.redact(s)
}

// clean masks secrets in a message to record.
func (t *Tracker) clean(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cleanHeld(s)
}

// Record adds a kubelet event.
func (t *Tracker) Record(typ, reason, object, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	message = t.cleanHeld(message)
	t.events = append(t.events, Event{Time: t.now(), Type: typ, Reason: reason, Object: object, Message: message})
}

// NotAdmitted says the pod is not admitted yet (podstep's engine, which
// admits it as its first step; a proxy sees pods the kubelet admitted):
// until Admitted or Rejected, STATUS is Pending, as kubectl shows a pod
// the kubelet has not synced: printPod (pkg/printers/internalversion/
// printers.go) starts from the phase and takes a container's waiting
// reason only from a container status, and the kubelet writes the
// statuses (each container waiting ContainerCreating, or PodInitializing,
// convertToAPIContainerStatuses) at its first SyncPod, after admission.
func (t *Tracker) NotAdmitted() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unadmitted = true
}

// Admitted marks the pod accepted by the node (HostIP, StartTime).
func (t *Tracker) Admitted(hostIP string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.unadmitted = false
	now := metav1.NewTime(t.now())
	t.status.StartTime = &now
	t.status.HostIP = hostIP
	if hostIP != "" {
		t.status.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
}

// Rejected marks the pod Failed with reason and message, as the kubelet's
// rejectPod does. rejectPod's status has only the QoS class, phase, reason
// and message: no container statuses and no conditions (the status manager
// keeps only conditions the kubelet does not own, and adds the start time).
func (t *Tracker) Rejected(reason, message string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rejected, t.unadmitted = true, false
	// Every container's status goes: each is a change of the step.
	for i := range t.status.InitContainerStatuses {
		t.touch(initKey(i), &t.status.InitContainerStatuses[i])
	}
	for i := range t.status.ContainerStatuses {
		t.touch(t.regularKey(i), &t.status.ContainerStatuses[i])
	}
	t.status.Phase = corev1.PodFailed
	t.status.Reason = reason
	t.status.Message = t.cleanHeld(message)
	t.status.InitContainerStatuses = nil
	t.status.ContainerStatuses = nil
	if t.status.StartTime == nil {
		now := metav1.NewTime(t.now())
		t.status.StartTime = &now
	}
}

// HookFailed records a container killed because its postStart hook failed:
// the kubelet reports it Waiting with reason PostStartHookError and its
// exit in the last termination state.
func (t *Tracker) HookFailed(name, message string) {
	message = t.clean(message)
	t.update(name, func(s *corev1.ContainerStatus) {
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
		}
		f := false
		s.Started = &f
		s.Ready = false
		s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason.ErrPostStartHook, Message: message}}
	})
}

// SandboxReady records the sandbox and its IPs.
func (t *Tracker) SandboxReady(ips []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sandboxReady = true
	if len(ips) > 0 {
		t.status.PodIP = ips[0]
		t.status.PodIPs = nil
		for _, ip := range ips {
			t.status.PodIPs = append(t.status.PodIPs, corev1.PodIP{IP: ip})
		}
	}
}

// SandboxGone records that the sandbox was stopped.
func (t *Tracker) SandboxGone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sandboxReady = false
}

// Waiting sets a container's waiting reason (ContainerCreating,
// ErrImagePull, CreateContainerError, CrashLoopBackOff, ...). An exit it
// replaces becomes the last termination state, as the kubelet reports a
// container waiting to restart. ContainerCreating is the kubelet's default
// waiting reason, which in a pod with init containers is PodInitializing
// (for init and regular containers alike), so that is what it records there.
func (t *Tracker) Waiting(name, why, message string) {
	if why == reason.ContainerCreating && len(t.pod.Spec.InitContainers) > 0 {
		why = reason.PodInitializing
	}
	message = t.clean(message)
	t.update(name, func(s *corev1.ContainerStatus) {
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
			f := false
			s.Started = &f
			s.Ready = false
		}
		s.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: why, Message: message}}
	})
}

// Created records the container ID and image ID.
func (t *Tracker) Created(name, id, imageID string) {
	t.update(name, func(s *corev1.ContainerStatus) {
		s.ContainerID = id
		if imageID != "" {
			s.ImageID = imageID
		}
	})
}

// Running marks a container running since at. As the kubelet's status
// manager does, a container with a startupProbe is not Started until the
// probe succeeds, and one with a readinessProbe is not Ready until that
// probe succeeds; without them a running container is started and ready
// (init containers other than sidecars are never ready while they run).
// An exit it replaces becomes the last termination state.
func (t *Tracker) Running(name string, at time.Time) {
	t.update(name, func(s *corev1.ContainerStatus) {
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
		}
		c := t.spec(name)
		started := c == nil || c.StartupProbe == nil
		s.Started = &started
		s.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at)}}
		s.Ready = started && (c == nil || c.ReadinessProbe == nil) && (!t.isInit(name) || t.isSidecar(name))
	})
}

// Started records a startup probe's success; a container without a
// readiness probe becomes ready with it.
func (t *Tracker) Started(name string) {
	t.update(name, func(s *corev1.ContainerStatus) {
		tr := true
		s.Started = &tr
		if c := t.spec(name); c != nil && c.ReadinessProbe == nil && s.State.Running != nil {
			s.Ready = !t.isInit(name) || t.isSidecar(name)
		}
	})
}

// SetReady records a readiness probe's verdict. As in the prober manager's
// UpdatePodStatus, only a running container that has started can be ready,
// and an init container other than a sidecar never is while it runs.
func (t *Tracker) SetReady(name string, ready bool) {
	t.update(name, func(s *corev1.ContainerStatus) {
		started := s.Started != nil && *s.Started
		s.Ready = ready && s.State.Running != nil && started && (!t.isInit(name) || t.isSidecar(name))
	})
}

// RestartCount sets the container's restart count: the kubelet reports the
// attempt number of the newest container.
func (t *Tracker) RestartCount(name string, n int) {
	t.update(name, func(s *corev1.ContainerStatus) {
		s.RestartCount = int32(n)
	})
}

// spec is the container named name in the pod spec (nil if none).
func (t *Tracker) spec(name string) *corev1.Container { return t.specs[name] }

// Terminated marks a container exited. It is not started; it is ready only
// if it is an init container other than a sidecar that exited 0, as the
// prober manager's UpdatePodStatus reports a completed init container.
func (t *Tracker) Terminated(name string, exitCode int32, reason, message string, started, finished time.Time) {
	message = t.clean(message)
	t.update(name, func(s *corev1.ContainerStatus) {
		f := false
		s.Started = &f
		s.Ready = exitCode == 0 && t.isInit(name) && !t.isSidecar(name)
		s.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: reason, Message: message,
			StartedAt: metav1.NewTime(started), FinishedAt: metav1.NewTime(finished), ContainerID: s.ContainerID,
		}}
	})
}

func (t *Tracker) update(name string, fn func(*corev1.ContainerStatus)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A rejected pod has no container statuses: nothing to update.
	if i, ok := t.initAt[name]; ok && i < len(t.status.InitContainerStatuses) {
		t.touch(initKey(i), &t.status.InitContainerStatuses[i])
		fn(&t.status.InitContainerStatuses[i])
		return
	}
	if i, ok := t.regularAt[name]; ok && i < len(t.status.ContainerStatuses) {
		t.touch(t.regularKey(i), &t.status.ContainerStatuses[i])
		fn(&t.status.ContainerStatuses[i])
	}
}

// touch keeps a container's status as it was at the mark, before its
// first change since: what StepChanges compares it with. The copy is
// shallow, as the Tracker never changes a value a status points to.
// t.mu is held.
func (t *Tracker) touch(key int, s *corev1.ContainerStatus) {
	if _, seen := t.before[key]; !seen {
		t.before[key] = *s
		t.touched = append(t.touched, key)
	}
}

func (t *Tracker) isInit(name string) bool { return t.inits[name] }

// isSidecar says whether name is an init container with restartPolicy
// Always.
func (t *Tracker) isSidecar(name string) bool { return t.inits[name] && restartable(t.specs[name]) }

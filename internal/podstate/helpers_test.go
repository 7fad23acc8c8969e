package podstate

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 6, 1, 10, 0, 0, 0, time.UTC)

// clock is the tracker's injected clock; tests move it on by hand.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

func (c *clock) tick() { c.now = c.now.Add(time.Second) }

// at is t0 plus n seconds.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

func ctr(name string, opts ...func(*corev1.Container)) corev1.Container {
	c := corev1.Container{Name: name, Image: "docker.io/library/busybox:1.35"}
	for _, o := range opts {
		o(&c)
	}
	return c
}

func probe() *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
}

func startupProbe(c *corev1.Container)   { c.StartupProbe = probe() }
func readinessProbe(c *corev1.Container) { c.ReadinessProbe = probe() }

// sidecar makes an init container a sidecar (restartPolicy Always).
func sidecar(c *corev1.Container) {
	p := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &p
}

func newPod(policy corev1.RestartPolicy, inits []corev1.Container, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1"},
		Spec:       corev1.PodSpec{RestartPolicy: policy, InitContainers: inits, Containers: containers},
	}
}

func newTracker(pod *corev1.Pod) (*Tracker, *clock) {
	clk := &clock{now: t0}
	return New(pod, clk.Now), clk
}

// condString is a condition as "Type=Status Reason: Message".
func condString(c corev1.PodCondition) string {
	s := string(c.Type) + "=" + string(c.Status)
	if c.Reason != "" {
		s += " " + c.Reason
	}
	if c.Message != "" {
		s += ": " + c.Message
	}
	return s
}

func condStrings(conds []corev1.PodCondition) []string {
	out := []string{}
	for _, c := range conds {
		out = append(out, condString(c))
	}
	return out
}

// kubeletConds is the kubelet's five conditions in generateAPIPodStatus's
// order; ready is both Ready and ContainersReady, as GeneratePodReadyCondition
// copies ContainersReady while that is not true.
func kubeletConds(readyToStart, initialized, ready string) []string {
	return []string{
		"PodReadyToStartContainers=" + readyToStart,
		"Initialized=" + initialized,
		"Ready=" + ready,
		"ContainersReady=" + ready,
		"PodScheduled=True",
	}
}

func status(t *testing.T, s Snapshot, name string) corev1.ContainerStatus {
	t.Helper()
	for _, c := range append(append([]corev1.ContainerStatus{}, s.Status.InitContainerStatuses...), s.Status.ContainerStatuses...) {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no status for container %q", name)
	return corev1.ContainerStatus{}
}

// stateString is a container state as "waiting Reason", "running" or
// "terminated N Reason".
func stateString(st corev1.ContainerState) string {
	switch {
	case st.Waiting != nil:
		return strings.TrimSpace("waiting " + st.Waiting.Reason)
	case st.Running != nil:
		return "running"
	case st.Terminated != nil:
		return strings.TrimSpace("terminated " + strconv.Itoa(int(st.Terminated.ExitCode)) + " " + st.Terminated.Reason)
	}
	return "none"
}

package steps

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// plan lays out the steps, as computePodActions decides what SyncPod will
// do for a new pod: create the sandbox, start the first init container (and,
// once it exits, the next), then start every container in spec order, each
// with its postStart hook before the next one starts.
func (e *Engine) plan() {
	add := func(stage Stage, name, title, container string, a action) {
		m, x := describe(a)
		e.steps = append(e.steps, &Step{
			ID: len(e.steps) + 1, Stage: stage, Name: name, Title: title, Container: container,
			Mirrors: m, Explain: x, State: Pending, act: a,
		})
	}
	add(StageAdmit, "admit", "admit the pod to the node", "", admitStep{})
	add(StageDirs, "dirs", "make the pod's data directories", "", dirsStep{})
	add(StageVolumes, "volumes", "set up the pod's volumes", "", volumesStep{})
	add(StagePullSecrets, "pull-secrets", "resolve the pod's image pull secrets", "", pullSecretsStep{})
	add(StageSandbox, "runtime-status", "check the runtime is ready", "", runtimeStatusStep{})
	add(StageSandbox, "run-sandbox", "create the pod sandbox", "", runSandboxStep{})
	add(StageSandbox, "sandbox-status", "read the sandbox's IP", "", sandboxStatusStep{})
	for i := range e.pod.Spec.InitContainers {
		c := &e.pod.Spec.InitContainers[i]
		e.planContainer(add, StageInit, c, isSidecar(c))
	}
	for i := range e.pod.Spec.Containers {
		e.planContainer(add, StageContainers, &e.pod.Spec.Containers[i], false)
	}
	if e.opts.Settle > 0 {
		add(StageContainers, "relist", relistTitle, "", relistStep{})
	}
	if e.opts.WaitReady {
		add(StageReady, "ready", readyTitle, "", readyStep{})
	}
}

const readyTitle = "probe until the pod is Ready"

type addFunc func(stage Stage, name, title, container string, a action)

func (e *Engine) planContainer(add addFunc, stage Stage, c *corev1.Container, sidecar bool) {
	kind := "container"
	if stage == StageInit {
		kind = "init container"
		if sidecar {
			kind = "sidecar container"
		}
	}
	n := c.Name
	add(stage, "pull/"+n, fmt.Sprintf("ensure image %s for %s %q", c.Image, kind, n), n, pullStep{name: n})
	add(stage, "create/"+n, fmt.Sprintf("create %s %q", kind, n), n, createStep{name: n})
	add(stage, "start/"+n, fmt.Sprintf("start %s %q", kind, n), n, startStep{name: n})
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		add(StagePostStart, "post-start/"+n, fmt.Sprintf("run the postStart hook of %q", n), n, postStartStep{name: n})
	}
	if stage == StageInit && !sidecar {
		add(stage, "wait/"+n, fmt.Sprintf("wait for init container %q to exit", n), n, waitInitStep{name: n})
	}
	if sidecar && c.StartupProbe != nil {
		add(stage, "startup/"+n, fmt.Sprintf("wait for sidecar %q to pass its startup probe", n), n, startupStep{name: n})
	}
}

func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// PlanTeardown appends the teardown steps (what the kubelet does when the
// pod is deleted) for whatever was created. Calling it again does nothing.
func (e *Engine) PlanTeardown() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.teardown {
		return
	}
	e.teardown = true
	// Steps never reached will not run now.
	for _, s := range e.steps[e.next:] {
		if s.State == Pending {
			s.State = Skipped
		}
	}
	e.next = len(e.steps)
	add := func(name, title string, a action) {
		m, x := describe(a)
		e.steps = append(e.steps, &Step{ID: len(e.steps) + 1, Stage: StageTeardown, Name: name, Title: title,
			Mirrors: m, Explain: x, State: Pending, act: a})
	}
	add("stop-containers", "stop the pod's containers", stopContainersStep{})
	add("stop-sandbox", "stop the pod sandbox", stopSandboxStep{})
	add("remove-containers", "remove the pod's containers", removeContainersStep{})
	add("remove-sandbox", "remove the pod sandbox", removeSandboxStep{})
	add("remove-dirs", "remove the pod's directories", removeDirsStep{})
}

// describer is implemented by every action: the kubelet function it
// mirrors and what the kubelet does there.
type describer interface {
	mirrors() string
	explain() string
}

func describe(a action) (string, string) {
	if d, ok := a.(describer); ok {
		return d.mirrors(), d.explain()
	}
	return "", ""
}

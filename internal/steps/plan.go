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
	add := func(stage Stage, title, container string, a action) {
		e.steps = append(e.steps, newStep(len(e.steps)+1, stage, title, container, a))
	}
	add(StageAdmit, "admit the pod to the node", "", admitStep{})
	add(StageDirs, "make the pod's data directories", "", dirsStep{})
	add(StageVolumes, "set up the pod's volumes", "", volumesStep{})
	add(StagePullSecrets, "resolve the pod's image pull secrets", "", pullSecretsStep{})
	add(StageSandbox, "check the runtime is ready", "", runtimeStatusStep{})
	add(StageSandbox, "create the pod sandbox", "", runSandboxStep{})
	add(StageSandbox, "read the sandbox's IP", "", sandboxStatusStep{})
	if hasImageVolumes(e.pod) {
		// SyncPod's lazyStart, before the first container it starts.
		stage := StageContainers
		if len(e.pod.Spec.InitContainers) > 0 {
			stage = StageInit
		}
		add(stage, "ensure the images of the pod's image volumes", "", imageVolumesStep{})
	}
	for i := range e.pod.Spec.InitContainers {
		c := &e.pod.Spec.InitContainers[i]
		e.planContainer(add, StageInit, c, isSidecar(c))
	}
	for i := range e.pod.Spec.Containers {
		e.planContainer(add, StageContainers, &e.pod.Spec.Containers[i], false)
	}
	if e.opts.Settle > 0 {
		add(StageContainers, relistTitle, "", relistStep{})
	}
	if e.opts.WaitReady {
		add(StageReady, readyTitle, "", readyStep{})
	}
}

const readyTitle = "probe until the pod is Ready"

// newStep makes a pending step: its kind and name come from its action.
func newStep(id int, stage Stage, title, container string, a action) *Step {
	m, x := describe(a)
	k := a.kind()
	return &Step{ID: id, Stage: stage, Kind: k, Name: k.stepName(container), Title: title, Container: container,
		Mirrors: m, Explain: x, State: Pending, act: a}
}

type addFunc func(stage Stage, title, container string, a action)

func (e *Engine) planContainer(add addFunc, stage Stage, c *corev1.Container, sidecar bool) {
	kind := "container"
	if stage == StageInit {
		kind = "init container"
		if sidecar {
			kind = "sidecar container"
		}
	}
	n := c.Name
	add(stage, fmt.Sprintf("ensure image %s for %s %q", c.Image, kind, n), n, pullStep{name: n})
	add(stage, fmt.Sprintf("create %s %q", kind, n), n, createStep{name: n})
	add(stage, fmt.Sprintf("start %s %q", kind, n), n, startStep{name: n})
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		add(StagePostStart, fmt.Sprintf("run the postStart hook of %q", n), n, postStartStep{name: n})
	}
	if stage == StageInit && !sidecar {
		add(stage, fmt.Sprintf("wait for init container %q to exit", n), n, waitInitStep{name: n})
	}
	if sidecar && c.StartupProbe != nil {
		add(stage, fmt.Sprintf("wait for sidecar %q to pass its startup probe", n), n, startupStep{name: n})
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
	add := func(title string, a action) {
		e.steps = append(e.steps, newStep(len(e.steps)+1, StageTeardown, title, "", a))
	}
	add("stop the pod's containers", stopContainersStep{})
	add("stop the pod sandbox", stopSandboxStep{})
	add("remove the pod's containers", removeContainersStep{})
	add("remove the pod sandbox", removeSandboxStep{})
	add("remove the pod's directories", removeDirsStep{})
}

func describe(a action) (string, string) {
	return a.mirrors(), a.explain()
}

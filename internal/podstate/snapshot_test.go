package podstate

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// The expected values below are read off the sources the tracker follows:
//   - STATUS/READY/RESTARTS: printPod, pkg/printers/internalversion/printers.go
//     (kubernetes), the server-side printer `kubectl get pod` shows;
//   - phase: getPhase, pkg/kubelet/kubelet_pods.go (v1.33);
//   - conditions: GeneratePodInitializedCondition, GeneratePodReadyCondition,
//     GenerateContainersReadyCondition, pkg/kubelet/status/generate.go, in the
//     order generateAPIPodStatus appends them;
//   - container readiness: the prober manager's UpdatePodStatus.

// want is what one snapshot must show. conds nil skips the conditions.
type want struct {
	display  string
	ready    string
	restarts int32
	phase    corev1.PodPhase
	conds    []string
}

// step is something the engine reports, then the snapshot it leads to.
type step struct {
	name string
	do   func(tr *Tracker)
	want want
}

// appExited is a step's do: the sandbox is ready, and container app ran
// from 1 s to 2 s and exited with code (reason as the runtime gives it).
func appExited(code int32, reason string) func(*Tracker) {
	return func(tr *Tracker) {
		tr.SandboxReady(nil)
		tr.Running("app", at(1))
		tr.Terminated("app", code, reason, "", at(1), at(2))
	}
}

const (
	notReadyApp   = "False ContainersNotReady: containers with unready status: [app]"
	initComplete  = "True"
	podFailedCond = "False PodFailed"
	podCompleted  = "False PodCompleted"
	crashMessage  = "back-off 10s restarting failed container=app pod=p_default(uid-1)"
)

func TestSnapshotSequences(t *testing.T) {
	never, always, onFailure := corev1.RestartPolicyNever, corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure
	twoInits := []corev1.Container{ctr("a"), ctr("b")}
	oneInit := []corev1.Container{ctr("setup")}

	cases := []struct {
		name  string
		pod   *corev1.Pod
		steps []step
	}{
		{
			name: "fresh pod without init containers",
			pod:  newPod(always, nil, ctr("app")),
			steps: []step{
				{"new", nil, want{"ContainerCreating", "0/1", 0, corev1.PodPending, kubeletConds("False", "True", notReadyApp)}},
				{"sandbox", func(tr *Tracker) { tr.SandboxReady([]string{"10.88.0.5"}) },
					want{"ContainerCreating", "0/1", 0, corev1.PodPending, kubeletConds("True", "True", notReadyApp)}},
				{"create", func(tr *Tracker) { tr.Waiting("app", "ContainerCreating", "") },
					want{"ContainerCreating", "0/1", 0, corev1.PodPending, nil}},
				{"running", func(tr *Tracker) { tr.Running("app", at(3)) },
					want{"Running", "1/1", 0, corev1.PodRunning, kubeletConds("True", "True", "True")}},
			},
		},
		{
			name: "init containers run one after the other",
			pod:  newPod(always, twoInits, ctr("app")),
			steps: []step{
				{"new", nil, want{"Init:0/2", "0/1", 0, corev1.PodPending, kubeletConds("False",
					"False ContainersNotInitialized: containers with incomplete status: [a b]", notReadyApp)}},
				{"sandbox", func(tr *Tracker) { tr.SandboxReady([]string{"10.88.0.5"}) },
					want{"Init:0/2", "0/1", 0, corev1.PodPending, nil}},
				// ContainerCreating is the default waiting reason only for a pod
				// without init containers: here it is PodInitializing.
				{"create a", func(tr *Tracker) { tr.Waiting("a", "ContainerCreating", "") },
					want{"Init:0/2", "0/1", 0, corev1.PodPending, nil}},
				{"a running", func(tr *Tracker) { tr.Running("a", at(2)) },
					want{"Init:0/2", "0/1", 0, corev1.PodPending, kubeletConds("True",
						"False ContainersNotInitialized: containers with incomplete status: [a b]", notReadyApp)}},
				{"a exited 0", func(tr *Tracker) { tr.Terminated("a", 0, "Completed", "", at(2), at(3)) },
					want{"Init:1/2", "0/1", 0, corev1.PodPending, kubeletConds("True",
						"False ContainersNotInitialized: containers with incomplete status: [b]", notReadyApp)}},
				{"b running", func(tr *Tracker) { tr.Waiting("b", "ContainerCreating", ""); tr.Running("b", at(4)) },
					want{"Init:1/2", "0/1", 0, corev1.PodPending, nil}},
				{"b exited 0", func(tr *Tracker) { tr.Terminated("b", 0, "Completed", "", at(4), at(5)) },
					want{"PodInitializing", "0/1", 0, corev1.PodPending, kubeletConds("True", initComplete, notReadyApp)}},
				{"create app", func(tr *Tracker) { tr.Waiting("app", "ContainerCreating", "") },
					want{"PodInitializing", "0/1", 0, corev1.PodPending, nil}},
				{"app running", func(tr *Tracker) { tr.Running("app", at(6)) },
					want{"Running", "1/1", 0, corev1.PodRunning, kubeletConds("True", initComplete, "True")}},
			},
		},
		{
			name: "init container exits 1, restartPolicy Never",
			pod:  newPod(never, oneInit, ctr("app")),
			steps: []step{
				{"running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("setup", at(1)) },
					want{"Init:0/1", "0/1", 0, corev1.PodPending, nil}},
				{"exited 1", func(tr *Tracker) { tr.Terminated("setup", 1, "Error", "", at(1), at(2)) },
					want{"Init:Error", "0/1", 0, corev1.PodFailed, kubeletConds("True",
						"False ContainersNotInitialized: containers with incomplete status: [setup]", podFailedCond)}},
			},
		},
		{
			name: "init container exits 1, restartPolicy Always: Init:CrashLoopBackOff",
			pod:  newPod(always, oneInit, ctr("app")),
			steps: []step{
				{"exited 1", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("setup", at(1))
					tr.Terminated("setup", 1, "Error", "", at(1), at(2))
				}, want{"Init:Error", "0/1", 0, corev1.PodPending, kubeletConds("True",
					"False ContainersNotInitialized: containers with incomplete status: [setup]", notReadyApp)}},
				{"restarted at once, exited again", func(tr *Tracker) {
					tr.Waiting("setup", "ContainerCreating", "")
					tr.RestartCount("setup", 1)
					tr.Running("setup", at(3))
					tr.Terminated("setup", 1, "Error", "", at(3), at(4))
				}, want{"Init:Error", "0/1", 1, corev1.PodPending, nil}},
				{"back-off", func(tr *Tracker) {
					tr.Waiting("setup", "CrashLoopBackOff", "back-off 10s restarting failed container=setup pod=p_default(uid-1)")
				}, want{"Init:CrashLoopBackOff", "0/1", 1, corev1.PodPending, kubeletConds("True",
					"False ContainersNotInitialized: containers with incomplete status: [setup]", notReadyApp)}},
			},
		},
		{
			name: "sidecar started without probes",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar)}, ctr("app")),
			steps: []step{
				{"new", nil, want{"Init:0/1", "0/2", 0, corev1.PodPending, kubeletConds("False",
					"False ContainersNotInitialized: containers with incomplete status: [proxy]",
					"False ContainersNotReady: containers with unready status: [proxy app]")}},
				{"sidecar running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("proxy", at(1)) },
					want{"PodInitializing", "1/2", 0, corev1.PodPending, kubeletConds("True", "True", notReadyApp)}},
				{"app running", func(tr *Tracker) { tr.Running("app", at(2)) },
					want{"Running", "2/2", 0, corev1.PodRunning, kubeletConds("True", "True", "True")}},
			},
		},
		{
			name: "sidecar with a startupProbe is not started until it succeeds",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar, startupProbe)}, ctr("app")),
			steps: []step{
				{"sidecar running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("proxy", at(1)) },
					want{"Init:0/1", "0/2", 0, corev1.PodPending, kubeletConds("True",
						"False ContainersNotInitialized: containers with incomplete status: [proxy]",
						"False ContainersNotReady: containers with unready status: [proxy app]")}},
				{"startup probe succeeded", func(tr *Tracker) { tr.Started("proxy") },
					want{"PodInitializing", "1/2", 0, corev1.PodPending, kubeletConds("True", "True", notReadyApp)}},
			},
		},
		{
			name: "sidecar with a readinessProbe initializes the pod once started, before it is ready",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar, readinessProbe)}, ctr("app")),
			steps: []step{
				{"sidecar running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("proxy", at(1)) },
					want{"PodInitializing", "0/2", 0, corev1.PodPending, kubeletConds("True", "True",
						"False ContainersNotReady: containers with unready status: [proxy app]")}},
				{"app running", func(tr *Tracker) { tr.Running("app", at(2)) },
					want{"Running", "1/2", 0, corev1.PodRunning, kubeletConds("True", "True",
						"False ContainersNotReady: containers with unready status: [proxy]")}},
				{"sidecar ready", func(tr *Tracker) { tr.SetReady("proxy", true) },
					want{"Running", "2/2", 0, corev1.PodRunning, kubeletConds("True", "True", "True")}},
			},
		},
		{
			name: "sidecar crashing after the app started",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar)}, ctr("app")),
			steps: []step{
				{"both running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("proxy", at(1)); tr.Running("app", at(2)) },
					want{"Running", "2/2", 0, corev1.PodRunning, nil}},
				{"sidecar in back-off", func(tr *Tracker) {
					tr.Terminated("proxy", 1, "Error", "", at(1), at(3))
					tr.RestartCount("proxy", 1)
					tr.Waiting("proxy", "CrashLoopBackOff", "back-off 10s restarting failed container=proxy pod=p_default(uid-1)")
				}, want{"Init:CrashLoopBackOff", "1/2", 1, corev1.PodRunning, kubeletConds("True", "True",
					"False ContainersNotReady: containers with unready status: [proxy]")}},
			},
		},
		{
			name: "sidecar keeps a Never pod Running after the app completed",
			pod:  newPod(never, []corev1.Container{ctr("proxy", sidecar)}, ctr("app")),
			steps: []step{
				{"app completed", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("proxy", at(1))
					tr.Running("app", at(2))
					tr.Terminated("app", 0, "Completed", "", at(2), at(3))
				}, want{"Completed", "1/2", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
				{"sidecar stopped", func(tr *Tracker) { tr.Terminated("proxy", 137, "Error", "", at(1), at(4)) },
					want{"Completed", "0/2", 0, corev1.PodSucceeded, kubeletConds("True", "True PodCompleted", podCompleted)}},
			},
		},
		{
			name: "readinessProbe: Running but not ready until it succeeds",
			pod:  newPod(always, nil, ctr("app", readinessProbe)),
			steps: []step{
				{"running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("app", at(1)) },
					want{"Running", "0/1", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
				{"ready", func(tr *Tracker) { tr.SetReady("app", true) },
					want{"Running", "1/1", 0, corev1.PodRunning, kubeletConds("True", "True", "True")}},
				{"unready again", func(tr *Tracker) { tr.SetReady("app", false) },
					want{"Running", "0/1", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
			},
		},
		{
			name: "startupProbe: not started nor ready until it succeeds",
			pod:  newPod(always, nil, ctr("app", startupProbe)),
			steps: []step{
				{"running", func(tr *Tracker) { tr.SandboxReady(nil); tr.Running("app", at(1)) },
					want{"Running", "0/1", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
				{"started", func(tr *Tracker) { tr.Started("app") },
					want{"Running", "1/1", 0, corev1.PodRunning, kubeletConds("True", "True", "True")}},
			},
		},
		{
			name: "crash loop under restartPolicy Always",
			pod:  newPod(always, nil, ctr("app")),
			steps: []step{
				{"exited 1", appExited(1, "Error"),
					want{"Error", "0/1", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
				{"restarted at once", func(tr *Tracker) {
					tr.Waiting("app", "ContainerCreating", "")
					tr.RestartCount("app", 1)
					tr.Running("app", at(3))
				}, want{"Running", "1/1", 1, corev1.PodRunning, kubeletConds("True", "True", "True")}},
				{"exited again, back-off", func(tr *Tracker) {
					tr.Terminated("app", 1, "Error", "", at(3), at(4))
					tr.Waiting("app", "CrashLoopBackOff", crashMessage)
				}, want{"CrashLoopBackOff", "0/1", 1, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
			},
		},
		{
			name: "restartPolicy Never, exit 0: Completed, Succeeded",
			pod:  newPod(never, nil, ctr("app")),
			steps: []step{
				{"completed", appExited(0, "Completed"),
					want{"Completed", "0/1", 0, corev1.PodSucceeded, kubeletConds("True", "True PodCompleted", podCompleted)}},
				{"sandbox stopped", func(tr *Tracker) { tr.SandboxGone() },
					want{"Completed", "0/1", 0, corev1.PodSucceeded, kubeletConds("False", "True PodCompleted", podCompleted)}},
			},
		},
		{
			name: "restartPolicy Never, exit 1: Error, Failed",
			pod:  newPod(never, nil, ctr("app")),
			steps: []step{
				{"failed", appExited(1, "Error"),
					want{"Error", "0/1", 0, corev1.PodFailed, kubeletConds("True", "True", podFailedCond)}},
			},
		},
		{
			name: "restartPolicy OnFailure, exit 0: Succeeded",
			pod:  newPod(onFailure, nil, ctr("app")),
			steps: []step{
				{"completed", appExited(0, "Completed"),
					want{"Completed", "0/1", 0, corev1.PodSucceeded, kubeletConds("True", "True PodCompleted", podCompleted)}},
			},
		},
		{
			name: "restartPolicy OnFailure, exit 3 without a reason: restarting, Running",
			pod:  newPod(onFailure, nil, ctr("app")),
			steps: []step{
				{"exited", appExited(3, ""),
					want{"ExitCode:3", "0/1", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
			},
		},
		{
			// printPod turns Completed back into Running only when the pod is
			// Ready, which it cannot be with a terminated container: NotReady.
			name: "one container Completed, one Running",
			pod:  newPod(never, nil, ctr("app"), ctr("job")),
			steps: []step{
				{"job completed", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("app", at(1))
					tr.Running("job", at(1))
					tr.Terminated("job", 0, "Completed", "", at(1), at(2))
				}, want{"NotReady", "1/2", 0, corev1.PodRunning, kubeletConds("True", "True",
					"False ContainersNotReady: containers with unready status: [job]")}},
			},
		},
		{
			name: "postStart hook failed",
			pod:  newPod(always, nil, ctr("app")),
			steps: []step{
				{"killed", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("app", at(1))
					tr.Terminated("app", 137, "Error", "", at(1), at(2))
					tr.HookFailed("app", "Exec lifecycle hook ([false]) for Container \"app\" in Pod \"p_default(uid-1)\" failed - error: command 'false' exited with 1: , message: \"\"")
				}, want{"PostStartHookError", "0/1", 0, corev1.PodRunning, kubeletConds("True", "True", notReadyApp)}},
			},
		},
		{
			name: "image pull fails, then backs off",
			pod:  newPod(always, nil, ctr("app")),
			steps: []step{
				{"ErrImagePull", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Waiting("app", "ErrImagePull", "Failed to pull image \"nope:1\": not found")
				}, want{"ErrImagePull", "0/1", 0, corev1.PodPending, kubeletConds("True", "True", notReadyApp)}},
				{"ImagePullBackOff", func(tr *Tracker) { tr.Waiting("app", "ImagePullBackOff", "Back-off pulling image \"nope:1\"") },
					want{"ImagePullBackOff", "0/1", 0, corev1.PodPending, nil}},
			},
		},
		{
			name: "init container image pull fails",
			pod:  newPod(always, twoInits, ctr("app")),
			steps: []step{
				{"ErrImagePull", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Waiting("a", "ErrImagePull", "Failed to pull image")
				}, want{"Init:ErrImagePull", "0/1", 0, corev1.PodPending, nil}},
			},
		},
		{
			name: "rejected at admission: OutOfcpu",
			pod:  newPod(always, nil, ctr("app")),
			steps: []step{
				{"rejected", func(tr *Tracker) {
					tr.Rejected("OutOfcpu", "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000")
				}, want{"OutOfcpu", "0/1", 0, corev1.PodFailed, []string{}}},
			},
		},
		{
			name: "rejected pod with a sidecar counts it in READY",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar)}, ctr("app")),
			steps: []step{
				{"rejected", func(tr *Tracker) { tr.Rejected("NodeAffinity", "Pod was rejected: Predicate NodeAffinity failed") },
					want{"NodeAffinity", "0/2", 0, corev1.PodFailed, []string{}}},
			},
		},
		{
			// normalizeStatus sorts container statuses by name, and printPod
			// takes the reason of the first container (in that order) that
			// has one.
			name: "containers are read in name order",
			pod:  newPod(always, nil, ctr("web"), ctr("app")),
			steps: []step{
				{"two failures", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("web", at(1))
					tr.Terminated("web", 1, "Error", "", at(1), at(2))
					tr.Waiting("web", "CrashLoopBackOff", "back-off 10s restarting failed container=web pod=p_default(uid-1)")
					tr.Waiting("app", "ErrImagePull", "not found")
				}, want{"ErrImagePull", "0/2", 0, corev1.PodPending, kubeletConds("True", "True",
					"False ContainersNotReady: containers with unready status: [web app]")}},
			},
		},
		{
			// RESTARTS counts the init containers' restarts only while the pod
			// initializes.
			name: "init container restarts drop out of RESTARTS once initialized",
			pod:  newPod(always, oneInit, ctr("app")),
			steps: []step{
				{"init retried", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("setup", at(1))
					tr.Terminated("setup", 1, "Error", "", at(1), at(2))
					tr.Waiting("setup", "ContainerCreating", "")
					tr.RestartCount("setup", 1)
					tr.Running("setup", at(3))
				}, want{"Init:0/1", "0/1", 1, corev1.PodPending, nil}},
				{"init done, app running", func(tr *Tracker) {
					tr.Terminated("setup", 0, "Completed", "", at(3), at(4))
					tr.Running("app", at(5))
				}, want{"Running", "1/1", 0, corev1.PodRunning, kubeletConds("True", "True", "True")}},
			},
		},
		{
			name: "init container exits 2 without a reason",
			pod:  newPod(never, oneInit, ctr("app")),
			steps: []step{
				{"exited", func(tr *Tracker) {
					tr.SandboxReady(nil)
					tr.Running("setup", at(1))
					tr.Terminated("setup", 2, "", "", at(1), at(2))
				}, want{"Init:ExitCode:2", "0/1", 0, corev1.PodFailed, nil}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, clk := newTracker(tc.pod)
			for _, s := range tc.steps {
				clk.tick()
				if s.do != nil {
					s.do(tr)
				}
				got := tr.Snapshot()
				w := s.want
				if got.Display != w.display || got.Ready != w.ready || got.Restarts != w.restarts || got.Status.Phase != w.phase {
					t.Errorf("%s: STATUS %s READY %s RESTARTS %d phase %s, want %s %s %d %s",
						s.name, got.Display, got.Ready, got.Restarts, got.Status.Phase, w.display, w.ready, w.restarts, w.phase)
				}
				if w.conds != nil {
					if gc := condStrings(got.Status.Conditions); !reflect.DeepEqual(gc, w.conds) {
						t.Errorf("%s: conditions\n got  %q\n want %q", s.name, gc, w.conds)
					}
				}
			}
		})
	}
}

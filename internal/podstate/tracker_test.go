package podstate

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// shape is what one container's status must look like.
type shape struct {
	state    string // stateString of State
	last     string // stateString of LastTerminationState ("none" if empty)
	started  bool
	ready    bool
	restarts int32
	message  string // the waiting or terminated message, when set
}

func checkShape(t *testing.T, label string, cs corev1.ContainerStatus, w shape) {
	t.Helper()
	got := shape{
		state:    stateString(cs.State),
		last:     stateString(cs.LastTerminationState),
		started:  cs.Started != nil && *cs.Started,
		ready:    cs.Ready,
		restarts: cs.RestartCount,
	}
	switch {
	case cs.State.Waiting != nil:
		got.message = cs.State.Waiting.Message
	case cs.State.Terminated != nil:
		got.message = cs.State.Terminated.Message
	}
	if w.message == "" {
		got.message = ""
	}
	if cs.Started == nil {
		t.Errorf("%s: %s has no started field; the prober manager sets it on every status", label, cs.Name)
	}
	if got != w {
		t.Errorf("%s: %s is %+v, want %+v", label, cs.Name, got, w)
	}
}

func TestContainerShapes(t *testing.T) {
	never, always := corev1.RestartPolicyNever, corev1.RestartPolicyAlways
	type check struct {
		container string
		want      shape
	}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		do     func(tr *Tracker)
		checks []check
	}{
		{
			name: "fresh pod without init containers",
			pod:  newPod(always, nil, ctr("app")),
			checks: []check{
				{"app", shape{state: "waiting ContainerCreating", last: "none"}},
			},
		},
		{
			name: "fresh pod with init containers: everything PodInitializing",
			pod:  newPod(always, []corev1.Container{ctr("a"), ctr("b")}, ctr("app")),
			do:   func(tr *Tracker) { tr.SandboxReady(nil); tr.Waiting("a", "ContainerCreating", "") },
			checks: []check{
				{"a", shape{state: "waiting PodInitializing", last: "none"}},
				{"b", shape{state: "waiting PodInitializing", last: "none"}},
				{"app", shape{state: "waiting PodInitializing", last: "none"}},
			},
		},
		{
			// The prober manager reports an init container that exited 0 ready.
			name: "init container exited 0 is ready, the next one runs, not ready",
			pod:  newPod(always, []corev1.Container{ctr("a"), ctr("b")}, ctr("app")),
			do: func(tr *Tracker) {
				tr.Running("a", at(1))
				tr.Terminated("a", 0, "Completed", "", at(1), at(2))
				tr.Running("b", at(3))
			},
			checks: []check{
				{"a", shape{state: "terminated 0 Completed", last: "none", ready: true}},
				{"b", shape{state: "running", last: "none", started: true}},
			},
		},
		{
			name: "failed init container is not ready",
			pod:  newPod(never, []corev1.Container{ctr("a")}, ctr("app")),
			do: func(tr *Tracker) {
				tr.Running("a", at(1))
				tr.Terminated("a", 1, "Error", "boom", at(1), at(2))
			},
			checks: []check{{"a", shape{state: "terminated 1 Error", last: "none", message: "boom"}}},
		},
		{
			name: "sidecar running is started and ready",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar)}, ctr("app")),
			do:   func(tr *Tracker) { tr.Running("proxy", at(1)) },
			checks: []check{
				{"proxy", shape{state: "running", last: "none", started: true, ready: true}},
				{"app", shape{state: "waiting PodInitializing", last: "none"}},
			},
		},
		{
			name: "sidecar with startupProbe: running, not started",
			pod:  newPod(always, []corev1.Container{ctr("proxy", sidecar, startupProbe)}, ctr("app")),
			do:   func(tr *Tracker) { tr.Running("proxy", at(1)) },
			checks: []check{
				{"proxy", shape{state: "running", last: "none"}},
			},
		},
		{
			name: "readinessProbe: started, not ready",
			pod:  newPod(always, nil, ctr("app", readinessProbe)),
			do:   func(tr *Tracker) { tr.Running("app", at(1)) },
			checks: []check{
				{"app", shape{state: "running", last: "none", started: true}},
			},
		},
		{
			name: "readinessProbe succeeded",
			pod:  newPod(always, nil, ctr("app", readinessProbe)),
			do:   func(tr *Tracker) { tr.Running("app", at(1)); tr.SetReady("app", true) },
			checks: []check{
				{"app", shape{state: "running", last: "none", started: true, ready: true}},
			},
		},
		{
			name: "startupProbe: not started until Started",
			pod:  newPod(always, nil, ctr("app", startupProbe)),
			do:   func(tr *Tracker) { tr.Running("app", at(1)) },
			checks: []check{
				{"app", shape{state: "running", last: "none"}},
			},
		},
		{
			name: "startupProbe succeeded, readinessProbe not yet",
			pod:  newPod(always, nil, ctr("app", startupProbe, readinessProbe)),
			do:   func(tr *Tracker) { tr.Running("app", at(1)); tr.Started("app") },
			checks: []check{
				{"app", shape{state: "running", last: "none", started: true}},
			},
		},
		{
			// Readiness probes do not run before the startup probe succeeded;
			// the prober manager leaves a container that has not started unready.
			name: "a readiness verdict before the container started is ignored",
			pod:  newPod(always, nil, ctr("app", startupProbe, readinessProbe)),
			do:   func(tr *Tracker) { tr.Running("app", at(1)); tr.SetReady("app", true) },
			checks: []check{
				{"app", shape{state: "running", last: "none"}},
			},
		},
		{
			name: "init container that is not a sidecar never becomes ready while it runs",
			pod:  newPod(always, []corev1.Container{ctr("a", readinessProbe)}, ctr("app")),
			do:   func(tr *Tracker) { tr.Running("a", at(1)); tr.SetReady("a", true) },
			checks: []check{
				{"a", shape{state: "running", last: "none", started: true}},
			},
		},
		{
			name: "CrashLoopBackOff keeps the exit as the last state",
			pod:  newPod(always, nil, ctr("app")),
			do: func(tr *Tracker) {
				tr.Created("app", "containerd://c1", "sha256:img")
				tr.Running("app", at(1))
				tr.Terminated("app", 1, "Error", "", at(1), at(2))
				tr.Waiting("app", "CrashLoopBackOff", crashMessage)
				tr.RestartCount("app", 1)
			},
			checks: []check{
				{"app", shape{state: "waiting CrashLoopBackOff", last: "terminated 1 Error", restarts: 1, message: crashMessage}},
			},
		},
		{
			name: "restarted container runs with the previous exit as its last state",
			pod:  newPod(always, nil, ctr("app")),
			do: func(tr *Tracker) {
				tr.Running("app", at(1))
				tr.Terminated("app", 2, "Error", "", at(1), at(2))
				tr.Waiting("app", "ContainerCreating", "")
				tr.RestartCount("app", 1)
				tr.Running("app", at(3))
			},
			checks: []check{
				{"app", shape{state: "running", last: "terminated 2 Error", started: true, ready: true, restarts: 1}},
			},
		},
		{
			// Restarted without a waiting state in between: the new container
			// still replaces the exited one, which becomes the last state.
			name: "Running over an exit keeps the exit as the last state",
			pod:  newPod(always, nil, ctr("app")),
			do: func(tr *Tracker) {
				tr.Running("app", at(1))
				tr.Terminated("app", 2, "Error", "", at(1), at(2))
				tr.Running("app", at(3))
			},
			checks: []check{
				{"app", shape{state: "running", last: "terminated 2 Error", started: true, ready: true}},
			},
		},
		{
			name: "postStart hook failure: waiting PostStartHookError, the kill as last state",
			pod:  newPod(always, nil, ctr("app")),
			do: func(tr *Tracker) {
				tr.Running("app", at(1))
				tr.Terminated("app", 137, "Error", "", at(1), at(2))
				tr.HookFailed("app", "hook failed")
			},
			checks: []check{
				{"app", shape{state: "waiting PostStartHookError", last: "terminated 137 Error", message: "hook failed"}},
			},
		},
		{
			name: "ErrImagePull then ImagePullBackOff",
			pod:  newPod(always, nil, ctr("app")),
			do: func(tr *Tracker) {
				tr.Waiting("app", "ErrImagePull", "not found")
				tr.Waiting("app", "ImagePullBackOff", "Back-off pulling image")
			},
			checks: []check{
				{"app", shape{state: "waiting ImagePullBackOff", last: "none", message: "Back-off pulling image"}},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := newTracker(tc.pod)
			if tc.do != nil {
				tc.do(tr)
			}
			s := tr.Snapshot()
			for _, c := range tc.checks {
				checkShape(t, tc.name, status(t, s, c.container), c.want)
			}
		})
	}
}

func TestCreatedAndTerminatedCarryIDs(t *testing.T) {
	tr, _ := newTracker(newPod(corev1.RestartPolicyNever, nil, ctr("app")))
	tr.Created("app", "containerd://abc", "sha256:1234")
	tr.Running("app", at(1))
	tr.Terminated("app", 0, "Completed", "done", at(1), at(2))
	cs := status(t, tr.Snapshot(), "app")
	if cs.ContainerID != "containerd://abc" || cs.ImageID != "sha256:1234" || cs.Image != "docker.io/library/busybox:1.35" {
		t.Errorf("ids: container %q image %q imageID %q", cs.ContainerID, cs.Image, cs.ImageID)
	}
	term := cs.State.Terminated
	if term == nil || term.ContainerID != "containerd://abc" || !term.StartedAt.Time.Equal(at(1)) || !term.FinishedAt.Time.Equal(at(2)) || term.Message != "done" {
		t.Errorf("terminated = %+v", term)
	}
	// An empty image ID (not known yet) keeps the one recorded.
	tr.Created("app", "containerd://def", "")
	if cs := status(t, tr.Snapshot(), "app"); cs.ImageID != "sha256:1234" || cs.ContainerID != "containerd://def" {
		t.Errorf("after second Created: container %q imageID %q", cs.ContainerID, cs.ImageID)
	}
}

func TestAdmittedAndSandboxFields(t *testing.T) {
	tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, nil, ctr("app")))
	tr.Admitted("192.168.1.10")
	tr.SandboxReady([]string{"10.88.0.5", "fd00::5"})
	s := tr.Snapshot()
	st := s.Status
	if st.HostIP != "192.168.1.10" || len(st.HostIPs) != 1 || st.HostIPs[0].IP != "192.168.1.10" {
		t.Errorf("host IP %q %v", st.HostIP, st.HostIPs)
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(t0) {
		t.Errorf("start time %v, want %v", st.StartTime, t0)
	}
	if st.PodIP != "10.88.0.5" || len(st.PodIPs) != 2 || st.PodIPs[1].IP != "fd00::5" {
		t.Errorf("pod IP %q %v", st.PodIP, st.PodIPs)
	}
	if st.QOSClass != corev1.PodQOSBestEffort {
		t.Errorf("QoS class %q, want BestEffort", st.QOSClass)
	}
}

// rejectPod's status is the QoS class, phase, reason and message; the status
// manager adds the start time and keeps no kubelet-owned condition.
func TestRejected(t *testing.T) {
	tr, clk := newTracker(newPod(corev1.RestartPolicyAlways, []corev1.Container{ctr("setup")}, ctr("app")))
	clk.tick()
	msg := "Pod was rejected: Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000"
	tr.Rejected("OutOfcpu", msg)
	tr.Record("Warning", "OutOfcpu", "", "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000")
	s := tr.Snapshot()
	st := s.Status
	if st.Phase != corev1.PodFailed || st.Reason != "OutOfcpu" || st.Message != msg {
		t.Errorf("phase %s reason %q message %q", st.Phase, st.Reason, st.Message)
	}
	if st.ContainerStatuses != nil || st.InitContainerStatuses != nil {
		t.Errorf("container statuses %v %v, want none", st.InitContainerStatuses, st.ContainerStatuses)
	}
	if len(st.Conditions) != 0 {
		t.Errorf("conditions %q, want none", condStrings(st.Conditions))
	}
	if st.StartTime == nil || !st.StartTime.Time.Equal(at(1)) {
		t.Errorf("start time %v, want %v", st.StartTime, at(1))
	}
	if s.Display != "OutOfcpu" || s.Ready != "0/1" || s.Restarts != 0 {
		t.Errorf("STATUS %s READY %s RESTARTS %d", s.Display, s.Ready, s.Restarts)
	}
	if len(s.Events) != 1 || s.Events[0].Type != "Warning" || s.Events[0].Reason != "OutOfcpu" {
		t.Errorf("events %+v", s.Events)
	}
}

// The status manager's updateLastTransitionTime keeps a condition's
// lastTransitionTime while its status stays the same, whatever else changes.
func TestConditionTransitionTimes(t *testing.T) {
	tr, clk := newTracker(newPod(corev1.RestartPolicyAlways, []corev1.Container{ctr("setup")}, ctr("app", readinessProbe)))
	times := func() map[corev1.PodConditionType]string {
		out := map[corev1.PodConditionType]string{}
		for _, c := range tr.Snapshot().Status.Conditions {
			out[c.Type] = fmt.Sprintf("%s@%d", c.Status, int(c.LastTransitionTime.Time.Sub(t0).Seconds()))
		}
		return out
	}
	steps := []struct {
		name string
		do   func()
		want map[corev1.PodConditionType]string
	}{
		{"new", func() {}, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "False@0", corev1.PodInitialized: "False@0",
			corev1.PodReady: "False@0", corev1.ContainersReady: "False@0", corev1.PodScheduled: "True@0",
		}},
		{"sandbox ready", func() { tr.SandboxReady(nil) }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "False@0",
			corev1.PodReady: "False@0", corev1.ContainersReady: "False@0", corev1.PodScheduled: "True@0",
		}},
		// The Initialized message changes (running, then done) but not its
		// status until the init container exited 0.
		{"init running", func() { tr.Running("setup", at(2)) }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "False@0",
			corev1.PodReady: "False@0", corev1.ContainersReady: "False@0", corev1.PodScheduled: "True@0",
		}},
		{"init done", func() { tr.Terminated("setup", 0, "Completed", "", at(2), at(3)) }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "True@3",
			corev1.PodReady: "False@0", corev1.ContainersReady: "False@0", corev1.PodScheduled: "True@0",
		}},
		{"app running, not ready", func() { tr.Running("app", at(4)) }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "True@3",
			corev1.PodReady: "False@0", corev1.ContainersReady: "False@0", corev1.PodScheduled: "True@0",
		}},
		{"app ready", func() { tr.SetReady("app", true) }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "True@3",
			corev1.PodReady: "True@5", corev1.ContainersReady: "True@5", corev1.PodScheduled: "True@0",
		}},
		{"nothing happens", func() {}, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "True@3",
			corev1.PodReady: "True@5", corev1.ContainersReady: "True@5", corev1.PodScheduled: "True@0",
		}},
		{"app unready", func() { tr.SetReady("app", false) }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "True@1", corev1.PodInitialized: "True@3",
			corev1.PodReady: "False@7", corev1.ContainersReady: "False@7", corev1.PodScheduled: "True@0",
		}},
		{"sandbox gone", func() { tr.SandboxGone() }, map[corev1.PodConditionType]string{
			corev1.PodReadyToStartContainers: "False@8", corev1.PodInitialized: "True@3",
			corev1.PodReady: "False@7", corev1.ContainersReady: "False@7", corev1.PodScheduled: "True@0",
		}},
	}
	for i, s := range steps {
		if i > 0 {
			clk.tick()
		}
		s.do()
		got := times()
		for typ, w := range s.want {
			if got[typ] != w {
				t.Errorf("%s: %s is %s, want %s", s.name, typ, got[typ], w)
			}
		}
	}
}

func TestEventsAreRecordedInOrderAndCopied(t *testing.T) {
	tr, clk := newTracker(newPod(corev1.RestartPolicyAlways, nil, ctr("app")))
	tr.Record("Normal", "Pulling", "spec.containers{app}", `Pulling image "busybox"`)
	clk.tick()
	tr.Record("Normal", "Pulled", "spec.containers{app}", `Successfully pulled image "busybox"`)
	s := tr.Snapshot()
	if len(s.Events) != 2 || s.Events[0].Reason != "Pulling" || s.Events[1].Reason != "Pulled" ||
		!s.Events[0].Time.Equal(t0) || !s.Events[1].Time.Equal(at(1)) || s.Events[1].Object != "spec.containers{app}" {
		t.Fatalf("events %+v", s.Events)
	}
	// The events are shared, read-only (a copy per snapshot made a run
	// quadratic in the containers): what is recorded later is not in an
	// earlier snapshot, even when appending reuses the list's array.
	tr.Record("Normal", "Created", "spec.containers{app}", "Created container app")
	s.Events = append(s.Events, Event{Reason: "appended"})
	s.Status.ContainerStatuses[0].Name = "changed"
	again := tr.Snapshot()
	if len(again.Events) != 3 || again.Events[2].Reason != "Created" || again.Status.ContainerStatuses[0].Name != "app" {
		t.Errorf("a snapshot shares state with the tracker: %+v", again)
	}
}

// A sandbox made again (after one was stopped) once init containers ran must
// leave their states alone; it used to dereference their nil waiting state.
func TestSandboxReadyAgainAfterInitContainersRan(t *testing.T) {
	tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, []corev1.Container{ctr("setup")}, ctr("app")))
	tr.SandboxReady([]string{"10.88.0.5"})
	tr.Running("setup", at(1))
	tr.Terminated("setup", 0, "Completed", "", at(1), at(2))
	tr.SandboxGone()
	tr.SandboxReady([]string{"10.88.0.6"})
	s := tr.Snapshot()
	if got := stateString(status(t, s, "setup").State); got != "terminated 0 Completed" {
		t.Errorf("setup is %s after the new sandbox", got)
	}
	if s.Status.PodIP != "10.88.0.6" || s.Display != "PodInitializing" {
		t.Errorf("pod IP %s STATUS %s", s.Status.PodIP, s.Display)
	}
}

func TestUnknownContainerIsIgnored(t *testing.T) {
	tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, nil, ctr("app")))
	tr.Running("nope", at(1))
	tr.Waiting("nope", "ErrImagePull", "")
	if s := tr.Snapshot(); s.Display != "ContainerCreating" || len(s.Status.ContainerStatuses) != 1 {
		t.Errorf("STATUS %s, %d statuses", s.Display, len(s.Status.ContainerStatuses))
	}
}

func TestNilClockIsTimeNow(t *testing.T) {
	tr := New(newPod(corev1.RestartPolicyAlways, nil, ctr("app")), nil)
	tr.Admitted("")
	if st := tr.Snapshot().Status; st.StartTime == nil || st.StartTime.IsZero() || st.HostIPs != nil {
		t.Errorf("start time %v host IPs %v", st.StartTime, st.HostIPs)
	}
}

// The engine reports from its step goroutine while frontends take snapshots.
func TestConcurrentUse(t *testing.T) {
	tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, []corev1.Container{ctr("proxy", sidecar)}, ctr("app"), ctr("web")))
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				name := []string{"proxy", "app", "web"}[(g+i)%3]
				switch i % 5 {
				case 0:
					tr.Waiting(name, "ContainerCreating", "")
				case 1:
					tr.Running(name, at(i))
				case 2:
					tr.SetReady(name, i%2 == 0)
				case 3:
					tr.Record("Normal", "Started", name, "Started container "+name)
				case 4:
					_ = tr.Snapshot()
				}
			}
		}(g)
	}
	wg.Wait()
	if n := len(tr.Snapshot().Events); n != 4*40 {
		t.Errorf("%d events, want %d", n, 4*40)
	}
}

// TestStatusBeforeAdmission: before the node admits the pod, kubectl's
// STATUS is the phase, Pending (printPod takes a waiting reason only from
// a container status, and the kubelet writes none before its first
// SyncPod); after admission, ContainerCreating or Init:0/N. A tracker that
// was not told the pod is unadmitted (a proxy's: the kubelet admitted it)
// shows the containers' waiting reasons at once.
func TestStatusBeforeAdmission(t *testing.T) {
	ctr := corev1.Container{Name: "app", Image: "busybox"}
	always := corev1.ContainerRestartPolicyAlways
	for _, tc := range []struct {
		name          string
		spec          corev1.PodSpec
		before, after string
	}{
		{"containers", corev1.PodSpec{Containers: []corev1.Container{ctr}}, "Pending", "ContainerCreating"},
		{"init containers", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}}, Containers: []corev1.Container{ctr}}, "Pending", "Init:0/1"},
		{"a sidecar", corev1.PodSpec{InitContainers: []corev1.Container{{Name: "side", Image: "busybox", RestartPolicy: &always}}, Containers: []corev1.Container{ctr}}, "Pending", "Init:0/1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: tc.spec}
			tr := New(pod, nil)
			if got := tr.Snapshot().Display; got != tc.after {
				t.Errorf("a proxy's tracker: STATUS %s, want %s", got, tc.after)
			}
			tr = New(pod, nil)
			tr.NotAdmitted()
			tr.StepChanges(false)
			if got := tr.Snapshot().Display; got != tc.before {
				t.Errorf("before admission: STATUS %s, want %s", got, tc.before)
			}
			tr.Admitted("192.0.2.2")
			changes, _, snap := tr.StepChanges(true)
			if snap.Display != tc.after {
				t.Errorf("after admission: STATUS %s, want %s", snap.Display, tc.after)
			}
			if got := FormatChanges(changes); !strings.Contains(got, "STATUS "+tc.before+" → "+tc.after) {
				t.Errorf("admission's changes %q lack the STATUS change", got)
			}
		})
	}
	tr := New(&corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{ctr}}}, nil)
	tr.NotAdmitted()
	tr.Rejected("OutOfcpu", "Node didn't have enough resource: cpu")
	if got := tr.Snapshot().Display; got != "OutOfcpu" {
		t.Errorf("rejected: STATUS %s, want OutOfcpu", got)
	}
}

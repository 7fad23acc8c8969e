package podstate

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podstep/podstep/internal/golden"
)

// engineStep is one engine step: what it reports to the tracker, as the
// step's action in internal/steps does.
type engineStep struct {
	title string
	do    func(tr *Tracker)
}

// scenario is a pod and the steps the engine runs for it.
type scenario struct {
	name  string
	pod   *corev1.Pod
	steps []engineStep
}

const (
	hostIP = "192.168.1.10"
	podIP  = "10.88.0.5"
	img    = "docker.io/library/busybox:1.35"
)

func ctrObj(name string) string  { return "spec.containers{" + name + "}" }
func initObj(name string) string { return "spec.initContainers{" + name + "}" }

// Steps shared by the scenarios, with the tracker calls of admitStep,
// sandboxStatusStep, pullStep (image present), createStep and startStep.
func admit() engineStep {
	return engineStep{"admit the pod to the node", func(tr *Tracker) { tr.Admitted(hostIP) }}
}

func sandboxIP() engineStep {
	return engineStep{"read the sandbox's IP", func(tr *Tracker) { tr.SandboxReady([]string{podIP}) }}
}

func pull(name, obj string) engineStep {
	return engineStep{"ensure image for " + name, func(tr *Tracker) {
		tr.Record("Normal", "Pulled", obj, fmt.Sprintf("Container image %q already present on machine", img))
	}}
}

func create(name, obj string, restarts int) engineStep {
	title := "create " + name
	if restarts > 0 {
		title += fmt.Sprintf(" (restart %d)", restarts)
	}
	return engineStep{title, func(tr *Tracker) {
		if restarts == 0 {
			tr.Waiting(name, "ContainerCreating", "")
		}
		tr.Created(name, fmt.Sprintf("containerd://%s-%d", name, restarts), "sha256:1234")
		if restarts > 0 {
			tr.RestartCount(name, restarts)
		}
		tr.Record("Normal", "Created", obj, "Created container: "+name)
	}}
}

func start(name, obj string, sec int) engineStep {
	return engineStep{"start " + name, func(tr *Tracker) {
		tr.Running(name, at(sec))
		tr.Record("Normal", "Started", obj, "Started container "+name)
	}}
}

// exited is the relist (or an init container's wait) seeing name exit.
func exited(title, name string, code int32, reason string, from, to int) engineStep {
	return engineStep{title, func(tr *Tracker) { tr.Terminated(name, code, reason, "", at(from), at(to)) }}
}

func scenarios() []scenario {
	hello := newPod(corev1.RestartPolicyAlways, nil, ctr("app"))
	hello.Name = "hello"

	initPod := newPod(corev1.RestartPolicyAlways, []corev1.Container{ctr("setup")}, ctr("app"))
	initPod.Name = "init"

	crash := newPod(corev1.RestartPolicyAlways, nil, ctr("app"))
	crash.Name = "crash"
	crashMsg := "back-off 10s restarting failed container=app pod=crash_default(uid-1)"

	hook := newPod(corev1.RestartPolicyAlways, nil, ctr("app", func(c *corev1.Container) {
		c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}}
	}))
	hook.Name = "hook"

	big := newPod(corev1.RestartPolicyAlways, nil, ctr("app", func(c *corev1.Container) {
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
	}))
	big.Name = "big"
	rejectMsg := "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 2000"

	return []scenario{
		{"hello", hello, []engineStep{
			admit(), sandboxIP(), pull("app", ctrObj("app")), create("app", ctrObj("app"), 0), start("app", ctrObj("app"), 5),
		}},
		{"init", initPod, []engineStep{
			admit(), sandboxIP(),
			pull("setup", initObj("setup")), create("setup", initObj("setup"), 0), start("setup", initObj("setup"), 5),
			exited("wait for init container setup to exit", "setup", 0, "Completed", 5, 6),
			pull("app", ctrObj("app")), create("app", ctrObj("app"), 0), start("app", ctrObj("app"), 9),
		}},
		{"crashloop", crash, []engineStep{
			admit(), sandboxIP(), pull("app", ctrObj("app")), create("app", ctrObj("app"), 0), start("app", ctrObj("app"), 5),
			exited("relist", "app", 1, "Error", 5, 6),
			{"check the restart back-off of app (not in back-off)", func(*Tracker) {}},
			pull("app", ctrObj("app")), create("app", ctrObj("app"), 1), start("app", ctrObj("app"), 10),
			exited("relist", "app", 1, "Error", 10, 11),
			{"check the restart back-off of app (in back-off)", func(tr *Tracker) {
				tr.Record("Warning", "BackOff", ctrObj("app"), "Back-off restarting failed container app in pod crash_default(uid-1)")
				tr.Waiting("app", "CrashLoopBackOff", crashMsg)
			}},
		}},
		{"poststart", hook, []engineStep{
			admit(), sandboxIP(), pull("app", ctrObj("app")), create("app", ctrObj("app"), 0), start("app", ctrObj("app"), 5),
			// postStartStep: the event, then killContainer (Killing, the exit),
			// then the container waits to be restarted.
			{"run the postStart hook of app", func(tr *Tracker) {
				tr.Record("Warning", "FailedPostStartHook", ctrObj("app"), "PostStartHook failed")
				tr.Record("Normal", "Killing", ctrObj("app"), "FailedPostStartHook")
				tr.Terminated("app", 137, "Error", "", at(5), at(6))
				tr.HookFailed("app", "command 'false' exited with 1: ")
			}},
		}},
		{"rejected", big, []engineStep{
			// admitStep → reject: the pod Failed, then the Warning event.
			{"admit the pod to the node", func(tr *Tracker) {
				tr.Rejected("OutOfcpu", "Pod was rejected: "+rejectMsg)
				tr.Record("Warning", "OutOfcpu", "", rejectMsg)
			}},
		}},
	}
}

// run drives the tracker through sc's steps, one clock tick each, and
// returns the snapshot before the first step and after each.
func (sc scenario) run() []Snapshot {
	tr, clk := newTracker(sc.pod)
	snaps := []Snapshot{tr.Snapshot()}
	for _, s := range sc.steps {
		clk.tick()
		s.do(tr)
		snaps = append(snaps, tr.Snapshot())
	}
	return snaps
}

// TestScenariosGolden writes, for each step of each scenario, the changed
// line, the new events and the changes as JSON, as a frontend would show
// them under the step.
func TestScenariosGolden(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			snaps := sc.run()
			var b strings.Builder
			fmt.Fprintf(&b, "pod/%s before the first step: STATUS %s  READY %s  RESTARTS %d\n", sc.pod.Name, snaps[0].Display, snaps[0].Ready, snaps[0].Restarts)
			for i, s := range sc.steps {
				prev, next := snaps[i], snaps[i+1]
				fmt.Fprintf(&b, "\n%d. %s\n", i+1, s.title)
				changes := Diff(prev, next)
				if line := FormatChanges(changes); line != "" {
					fmt.Fprintf(&b, "   %s\n", line)
				}
				for _, l := range FormatEvents(sc.pod.Name, NewEvents(prev, next)) {
					fmt.Fprintf(&b, "   %s\n", l)
				}
				for _, c := range changes {
					j, err := json.Marshal(c)
					if err != nil {
						t.Fatal(err)
					}
					fmt.Fprintf(&b, "   %s\n", j)
				}
			}
			golden.Check(t, filepath.Join("testdata", "changes", sc.name+".golden"), b.String())
		})
	}
}

func scenarioNamed(t *testing.T, name string) (scenario, []Snapshot) {
	t.Helper()
	for _, sc := range scenarios() {
		if sc.name == name {
			return sc, sc.run()
		}
	}
	t.Fatalf("no scenario %q", name)
	return scenario{}, nil
}

// TestDiffExact pins the exact changes of a few steps.
func TestDiffExact(t *testing.T) {
	cases := []struct {
		scenario string
		step     int // 1-based, as in the golden files
		want     []Change
	}{
		{"hello", 1, []Change{{FieldHostIP, "", hostIP}}},
		{"hello", 2, []Change{
			{FieldPodIP, "", podIP},
			{"status.conditions[PodReadyToStartContainers].status", "False", "True"},
		}},
		// Pulling and creating change nothing in the status: the container
		// was already waiting in ContainerCreating.
		{"hello", 3, nil},
		{"hello", 4, nil},
		{"hello", 5, []Change{
			{FieldStatus, "ContainerCreating", "Running"},
			{FieldReady, "0/1", "1/1"},
			{FieldPhase, "Pending", "Running"},
			{"status.conditions[Ready].status", "False", "True"},
			{"status.conditions[ContainersReady].status", "False", "True"},
			{"status.containerStatuses[app].state", "waiting ContainerCreating", "running"},
			{"status.containerStatuses[app].ready", "false", "true"},
			{"status.containerStatuses[app].started", "false", "true"},
		}},
		{"init", 5, []Change{
			{"status.initContainerStatuses[setup].state", "waiting PodInitializing", "running"},
			{"status.initContainerStatuses[setup].started", "false", "true"},
		}},
		{"init", 6, []Change{
			{FieldStatus, "Init:0/1", "PodInitializing"},
			{"status.conditions[Initialized].status", "False", "True"},
			{"status.initContainerStatuses[setup].state", "running", "terminated Completed (exit 0)"},
			{"status.initContainerStatuses[setup].ready", "false", "true"},
			{"status.initContainerStatuses[setup].started", "true", "false"},
		}},
		{"crashloop", 6, []Change{
			{FieldStatus, "Running", "Error"},
			{FieldReady, "1/1", "0/1"},
			{"status.conditions[Ready].status", "True", "False"},
			{"status.conditions[ContainersReady].status", "True", "False"},
			{"status.containerStatuses[app].state", "running", "terminated Error (exit 1)"},
			{"status.containerStatuses[app].ready", "true", "false"},
			{"status.containerStatuses[app].started", "true", "false"},
		}},
		{"crashloop", 9, []Change{
			{FieldRestarts, "0", "1"},
			{"status.containerStatuses[app].restartCount", "0", "1"},
		}},
		{"crashloop", 12, []Change{
			{FieldStatus, "Error", "CrashLoopBackOff"},
			{"status.containerStatuses[app].state", "terminated Error (exit 1)", "waiting CrashLoopBackOff"},
		}},
		{"rejected", 1, []Change{
			{FieldStatus, "ContainerCreating", "OutOfcpu"},
			{FieldPhase, "Pending", "Failed"},
			{FieldReason, "", "OutOfcpu"},
			{"status.conditions[PodReadyToStartContainers].status", "False", ""},
			{"status.conditions[Initialized].status", "True", ""},
			{"status.conditions[Ready].status", "False", ""},
			{"status.conditions[ContainersReady].status", "False", ""},
			{"status.conditions[PodScheduled].status", "True", ""},
			{"status.containerStatuses[app].state", "waiting ContainerCreating", ""},
		}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%d", tc.scenario, tc.step), func(t *testing.T) {
			_, snaps := scenarioNamed(t, tc.scenario)
			got := Diff(snaps[tc.step-1], snaps[tc.step])
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff =\n%s\nwant\n%s", changeLines(got), changeLines(tc.want))
			}
		})
	}
}

func changeLines(cs []Change) string {
	if cs == nil {
		return "  nil"
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s: %q → %q\n", c.Field, c.From, c.To)
	}
	return b.String()
}

// TestDiffEdges covers what no scenario reaches: nothing changed, a first
// snapshot compared with nothing, containers and conditions that come and
// go, states with a signal or no reason, and snapshots listing containers
// in different orders.
func TestDiffEdges(t *testing.T) {
	tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, []corev1.Container{ctr("setup")}, ctr("app"), ctr("web")))
	base := tr.Snapshot()
	waiting := func(r string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r}}
	}
	term := func(code, signal int32, reason string) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Signal: signal, Reason: reason}}
	}
	cases := []struct {
		name   string
		prev   Snapshot
		mutate func(s *Snapshot)
		want   []Change
	}{
		{"identical", base, func(*Snapshot) {}, nil},
		{"a new waiting message or start time is no change", base, func(s *Snapshot) {
			s.Status.ContainerStatuses[0].State.Waiting.Message = "new message"
		}, nil},
		{"another order of containers and conditions is no change", base, func(s *Snapshot) {
			cs := s.Status.ContainerStatuses
			cs[0], cs[1] = cs[1], cs[0]
			cd := s.Status.Conditions
			cd[0], cd[4] = cd[4], cd[0]
		}, nil},
		{"from the zero snapshot everything appears", Snapshot{}, func(*Snapshot) {}, []Change{
			{FieldStatus, "", "Init:0/1"},
			{FieldReady, "", "0/2"},
			{FieldPhase, "", "Pending"},
			{"status.conditions[PodReadyToStartContainers].status", "", "False"},
			{"status.conditions[Initialized].status", "", "False"},
			{"status.conditions[Ready].status", "", "False"},
			{"status.conditions[ContainersReady].status", "", "False"},
			{"status.conditions[PodScheduled].status", "", "True"},
			{"status.initContainerStatuses[setup].state", "", "waiting PodInitializing"},
			{"status.containerStatuses[app].state", "", "waiting PodInitializing"},
			{"status.containerStatuses[web].state", "", "waiting PodInitializing"},
		}},
		{"a container that goes shows the fields that were set", base, func(s *Snapshot) {
			s.Status.ContainerStatuses = s.Status.ContainerStatuses[1:]
		}, []Change{{"status.containerStatuses[app].state", "waiting PodInitializing", ""}}},
		{"a ready, started, restarted container that goes", func() Snapshot {
			s := base
			s.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Ready: true, Started: ptr(true), RestartCount: 3,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
			return s
		}(), func(s *Snapshot) { s.Status.ContainerStatuses = nil }, []Change{
			{"status.containerStatuses[app].state", "running", ""},
			{"status.containerStatuses[app].ready", "true", "false"},
			{"status.containerStatuses[app].started", "true", "false"},
			{"status.containerStatuses[app].restartCount", "3", "0"},
		}},
		{"a condition that appears, one that goes", base, func(s *Snapshot) {
			s.Status.Conditions = append(s.Status.Conditions[1:], corev1.PodCondition{Type: "DisruptionTarget", Status: corev1.ConditionTrue})
		}, []Change{
			{"status.conditions[DisruptionTarget].status", "", "True"},
			{"status.conditions[PodReadyToStartContainers].status", "False", ""},
		}},
		{"signal, no reason, and an exit code change", base, func(s *Snapshot) {
			s.Status.InitContainerStatuses[0].State = term(137, 9, "")
			s.Status.ContainerStatuses[0].State = term(2, 0, "")
		}, []Change{
			{"status.initContainerStatuses[setup].state", "waiting PodInitializing", "terminated (exit 137, signal 9)"},
			{"status.containerStatuses[app].state", "waiting PodInitializing", "terminated (exit 2)"},
		}},
		{"another exit code or signal with the same reason", func() Snapshot {
			s := tr.Snapshot()
			s.Status.InitContainerStatuses[0].State = term(1, 0, "Error")
			s.Status.ContainerStatuses[0].State = term(137, 9, "Error")
			return s
		}(), func(s *Snapshot) {
			s.Status.InitContainerStatuses[0].State = term(2, 0, "Error")
			s.Status.ContainerStatuses[0].State = term(137, 15, "Error")
		}, []Change{
			{"status.initContainerStatuses[setup].state", "terminated Error (exit 1)", "terminated Error (exit 2)"},
			{"status.containerStatuses[app].state", "terminated Error (exit 137, signal 9)", "terminated Error (exit 137, signal 15)"},
		}},
		{"a waiting reason change", base, func(s *Snapshot) {
			s.Status.ContainerStatuses[1].State = waiting("ErrImagePull")
		}, []Change{{"status.containerStatuses[web].state", "waiting PodInitializing", "waiting ErrImagePull"}}},
		{"an empty state", base, func(s *Snapshot) {
			s.Status.ContainerStatuses[1].State = corev1.ContainerState{}
		}, []Change{{"status.containerStatuses[web].state", "waiting PodInitializing", ""}}},
		{"pod IP replaced by a new sandbox's, host IP gone", func() Snapshot {
			s := base
			s.Status.PodIP, s.Status.HostIP = "10.88.0.5", hostIP
			return s
		}(), func(s *Snapshot) { s.Status.PodIP = "10.88.0.6" }, []Change{
			{FieldHostIP, hostIP, ""},
			{FieldPodIP, "10.88.0.5", "10.88.0.6"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := tr.Snapshot() // a fresh deep copy to mutate
			tc.mutate(&next)
			got := Diff(tc.prev, next)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Diff =\n%s\nwant\n%s", changeLines(got), changeLines(tc.want))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestChangeContainerAndCondition(t *testing.T) {
	cases := []struct {
		field, container string
		init             bool
		condition        string
	}{
		{"status", "", false, ""},
		{"status.podIP", "", false, ""},
		{"status.containerStatuses[app].state", "app", false, ""},
		{"status.initContainerStatuses[setup].restartCount", "setup", true, ""},
		{"status.containerStatuses[].state", "", false, ""},
		{"status.containerStatuses[app", "", false, ""},
		{"status.conditions[Ready].status", "", false, "Ready"},
		{"status.conditions[Ready].reason", "", false, ""},
	}
	for _, tc := range cases {
		c := Change{Field: tc.field}
		name, init := c.Container()
		if name != tc.container || init != tc.init || c.Condition() != tc.condition {
			t.Errorf("%s: Container() = %q, %v; Condition() = %q; want %q, %v; %q", tc.field, name, init, c.Condition(), tc.container, tc.init, tc.condition)
		}
	}
}

// The JSON of a change is the issue's: {"field":…,"from":…,"to":…}.
func TestChangeJSON(t *testing.T) {
	b, err := json.Marshal([]Change{{Field: "status.conditions[Initialized].status", From: "False", To: "True"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"field":"status.conditions[Initialized].status","from":"False","to":"True"}]`; string(b) != want {
		t.Errorf("JSON %s, want %s", b, want)
	}
}

// BenchmarkDiff measures Diff on a 50-container pod: it runs once per step.
func BenchmarkDiff(b *testing.B) {
	var cs []corev1.Container
	for i := range 50 {
		cs = append(cs, ctr(fmt.Sprintf("c%02d", i)))
	}
	tr, _ := newTracker(newPod(corev1.RestartPolicyAlways, nil, cs...))
	tr.Admitted(hostIP)
	tr.SandboxReady([]string{podIP})
	for i := range 49 {
		tr.Running(cs[i].Name, at(i))
	}
	before := tr.Snapshot()
	tr.Running(cs[49].Name, at(50)) // the last container starts: the pod is Running and Ready
	after := tr.Snapshot()
	fresh, _ := newTracker(newPod(corev1.RestartPolicyAlways, nil, cs...))
	initial := fresh.Snapshot()
	for _, bc := range []struct {
		name       string
		prev, next Snapshot
	}{
		{"unchanged", after, after},
		{"one-container-starts", before, after},
		{"all-containers-start", initial, after},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Diff(bc.prev, bc.next)
			}
		})
	}
}

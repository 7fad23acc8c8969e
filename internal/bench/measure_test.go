package bench

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

var t0 = time.Date(2026, 11, 23, 16, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// step is a done step of kind k from ms from to ms to, with calls.
func step(k steps.Kind, container string, from, to int, pod *podstate.Snapshot, calls ...cri.Call) steps.Step {
	st := steps.StageContainers
	switch k {
	case steps.KindAdmit:
		st = steps.StageAdmit
	case steps.KindRunSandbox:
		st = steps.StageSandbox
	case steps.KindStopContainers, steps.KindRemoveDirs:
		st = steps.StageTeardown
	}
	return steps.Step{Kind: k, Stage: st, Name: k.String(), Container: container, State: steps.Done,
		Started: at(from), Duration: time.Duration(to-from) * time.Millisecond, Pod: pod, Calls: calls}
}

func call(method string, from, to int) cri.Call {
	return cri.Call{Method: method, Start: at(from), Duration: time.Duration(to-from) * time.Millisecond}
}

func running(names ...string) *podstate.Snapshot {
	s := &podstate.Snapshot{}
	for _, n := range names {
		s.Status.ContainerStatuses = append(s.Status.ContainerStatuses, corev1.ContainerStatus{Name: n,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(at(1))}}})
	}
	return s
}

func waiting(names ...string) *podstate.Snapshot {
	s := &podstate.Snapshot{}
	for _, n := range names {
		s.Status.ContainerStatuses = append(s.Status.ContainerStatuses, corev1.ContainerStatus{Name: n,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
	}
	return s
}

func initDone(snap *podstate.Snapshot, name string, finishedMs int) *podstate.Snapshot {
	snap.Status.InitContainerStatuses = append(snap.Status.InitContainerStatuses, corev1.ContainerStatus{Name: name,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(at(finishedMs))}}})
	return snap
}

func TestMeasure(t *testing.T) {
	app := corev1.Container{Name: "app"}
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}, Spec: corev1.PodSpec{Containers: []corev1.Container{app}}}
	withInit := plain.DeepCopy()
	withInit.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	stateful := plain.DeepCopy()
	stateful.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}}}
	ephemeral := plain.DeepCopy()
	ephemeral.Spec.Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}

	// admit at 0, sandbox 10-110 (RunPodSandbox 20-100), pull 110-210
	// (PullImage 120-200), create 210-230, start 230-260: running.
	base := []steps.Step{
		step(steps.KindAdmit, "", 0, 1, waiting("app")),
		step(steps.KindRunSandbox, "", 10, 110, waiting("app"), call("RunPodSandbox", 20, 100)),
		step(steps.KindPull, "app", 110, 210, waiting("app"), call("ImageStatus", 110, 115), call("PullImage", 120, 200)),
		step(steps.KindCreate, "app", 210, 230, waiting("app"), call("CreateContainer", 212, 228)),
		step(steps.KindStart, "app", 230, 260, running("app"), call("StartContainer", 231, 259)),
		step(steps.KindStopContainers, "", 300, 350, running("app"), call("StopContainer", 301, 349)),
	}
	failedPull := append([]steps.Step{}, base...)
	failedPull[2].Calls = []cri.Call{call("PullImage", 120, 200)}
	failedPull[2].Calls[0].Err = errTest{}
	// init: start 40-50, seen finished (FinishedAt 150) by its wait step 50-160.
	initSteps := []steps.Step{
		step(steps.KindAdmit, "", 0, 1, waiting("app")),
		{Kind: steps.KindStart, Stage: steps.StageInit, Container: "init", State: steps.Done, Started: at(40), Duration: 10 * time.Millisecond, Pod: waiting("app")},
		{Kind: steps.KindWaitInit, Stage: steps.StageInit, Container: "init", State: steps.Done, Started: at(50), Duration: 110 * time.Millisecond, Pod: initDone(waiting("app"), "init", 150)},
		step(steps.KindStart, "app", 160, 200, running("app")),
	}
	never := []steps.Step{step(steps.KindAdmit, "", 0, 1, waiting("app")), step(steps.KindCreate, "app", 1, 20, waiting("app"))}

	tests := []struct {
		name                 string
		pod                  *corev1.Pod
		steps                []steps.Step
		started              bool
		totalMs, sliMs       float64
		criMs                float64
		phase                string
		phaseMs              float64
		created, teardownDur time.Duration
	}{
		{"pull excluded from the SLI", plain, base, true, 260, 180, 80 + 5 + 80 + 16 + 28 + 48, "pull", 100, 260 * time.Millisecond, 50 * time.Millisecond},
		{"a failed pull is not pulling time", plain, failedPull, true, 260, 260, 80 + 80 + 16 + 28 + 48, "sandbox", 100, 260 * time.Millisecond, 50 * time.Millisecond},
		{"init container run time excluded", withInit, initSteps, true, 200, 100, 0, "init-wait", 110, 200 * time.Millisecond, 0},
		{"stateful pod: no SLI", stateful, base, true, 260, 0, 80 + 5 + 80 + 16 + 28 + 48, "create", 20, 260 * time.Millisecond, 50 * time.Millisecond},
		{"emptyDir is not stateful", ephemeral, base, true, 260, 180, 80 + 5 + 80 + 16 + 28 + 48, "start", 30, 260 * time.Millisecond, 50 * time.Millisecond},
		{"never running: no startup figures", plain, never, false, 0, 0, 0, "create", 19, 20 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Measure(tt.pod, tt.steps, tt.created, tt.teardownDur)
			if p.Started != tt.started || p.TotalMs != tt.totalMs || p.SLIMs != tt.sliMs {
				t.Errorf("started %v total %v sli %v, want %v %v %v", p.Started, p.TotalMs, p.SLIMs, tt.started, tt.totalMs, tt.sliMs)
			}
			if p.CRIMs != tt.criMs {
				t.Errorf("CRI floor %v, want %v", p.CRIMs, tt.criMs)
			}
			if own := round(ms(int64(tt.created+tt.teardownDur)) - tt.criMs - p.WaitMs); p.OwnMs != own {
				t.Errorf("own %v, want wall − CRI − wait = %v", p.OwnMs, own)
			}
			if p.Phases[tt.phase] != tt.phaseMs {
				t.Errorf("phase %s = %v, want %v (all %v)", tt.phase, p.Phases[tt.phase], tt.phaseMs, p.Phases)
			}
		})
	}
}

type errTest struct{}

func (errTest) Error() string { return "pull failed" }

// TestOwnSteps: each step kind's own time is its time less its CRI calls,
// the waiting steps have none, and Build summarises them in the order a
// pod goes through the steps.
func TestOwnSteps(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	all := []steps.Step{
		step(steps.KindAdmit, "", 0, 1, waiting("app")),
		step(steps.KindRunSandbox, "", 10, 110, waiting("app"), call("RunPodSandbox", 20, 100)),
		step(steps.KindCreate, "app", 210, 230, waiting("app"), call("CreateContainer", 212, 228)),
		step(steps.KindStart, "app", 230, 260, running("app"), call("StartContainer", 231, 259)),
		{Kind: steps.KindReady, Stage: steps.StageContainers, State: steps.Done, Started: at(260), Duration: 40 * time.Millisecond, Pod: running("app")},
		step(steps.KindRemoveDirs, "", 300, 307, running("app")),
	}
	p := Measure(pod, all, 300*time.Millisecond, 7*time.Millisecond)
	want := map[string]float64{"admit": 1, "run-sandbox": 20, "create": 4, "start": 2, "remove-dirs": 7}
	if len(p.OwnSteps) != len(want) {
		t.Errorf("own steps %v, want %v", p.OwnSteps, want)
	}
	for k, v := range want {
		if p.OwnSteps[k] != v {
			t.Errorf("own time of %s = %v, want %v (all %v)", k, p.OwnSteps[k], v, p.OwnSteps)
		}
	}
	q := p
	q.OwnSteps = map[string]float64{"admit": 3, "remove-dirs": 9}
	l := Build(1, []Pod{p, q}, time.Second, 0)
	var names []string
	for _, s := range l.OwnSteps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "admit,run-sandbox,create,start,remove-dirs" {
		t.Errorf("own steps in the order %s, want admit,run-sandbox,create,start,remove-dirs", got)
	}
	if l.OwnSteps[0].N != 2 || l.OwnSteps[0].Max != 3 || l.OwnSteps[1].N != 1 {
		t.Errorf("admit %+v, run-sandbox %+v: want 2 samples up to 3 ms, and 1", l.OwnSteps[0], l.OwnSteps[1])
	}
}

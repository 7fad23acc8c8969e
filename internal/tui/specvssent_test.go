package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/podstate"
	"github.com/podstep/podstep/internal/steps"
)

// fakeWatch is a Live engine as `podstep proxy` gives the TUI (a
// watch.Pod): the kubelet ran the steps, the TUI only reads them.
type fakeWatch struct {
	pod     *corev1.Pod
	steps   []steps.Step
	changed chan struct{}
}

func (f *fakeWatch) Pod() *corev1.Pod                            { return f.pod }
func (f *fakeWatch) Steps() []steps.Step                         { return f.steps }
func (f *fakeWatch) NextStep() (steps.Step, bool)                { return steps.Step{}, false }
func (f *fakeWatch) Failed() (steps.Step, bool)                  { return steps.Step{}, false }
func (f *fakeWatch) PodState() podstate.Snapshot                 { return podstate.Snapshot{Display: "Running"} }
func (f *fakeWatch) Next(context.Context) (steps.Step, error)    { return steps.Step{}, steps.ErrNoStep }
func (f *fakeWatch) Continue(context.Context) error              { return steps.ErrNoStep }
func (f *fakeWatch) Retry() error                                { return steps.ErrNoStep }
func (f *fakeWatch) ToggleBreakStage(steps.Stage) bool           { return false }
func (f *fakeWatch) ToggleBreakStep(int) bool                    { return false }
func (f *fakeWatch) Subscribe(func(steps.Event)) (cancel func()) { return func() {} }
func (f *fakeWatch) Changed() <-chan struct{}                    { return f.changed }
func (f *fakeWatch) ContainerLog(string, int) ([]steps.LogLine, error) {
	return nil, steps.ErrNoContainer
}

// vsSent is what watch.specVsSent says of a container whose command holds
// a "; " (TestSpecStages's differences, and a command).
const vsSent = `command: spec ["sh" "-c" "a; b"], sent ["sh" "-c" "a; b; c"]; env: +1 names from the kubelet's service links (KUBERNETES_PORT); mounts: +1 from the kubelet (/etc/hosts); mounts: 1 of the spec not sent (/data)`

// TestSpecVsSent: a proxy session's create step shows the desired spec
// beside what the kubelet sent, one difference per line, none cut (the
// one-line detail cut all but the first at 80 columns).
func TestSpecVsSent(t *testing.T) {
	at := epoch
	f := &fakeWatch{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, changed: make(chan struct{}),
		steps: []steps.Step{
			{ID: 1, Name: "run-sandbox", Title: "run the pod sandbox", Stage: steps.StageSandbox, Kind: steps.KindRunSandbox, State: steps.Done, Started: at,
				Calls: []cri.Call{{Method: "RunPodSandbox", Start: at}}},
			{ID: 2, Name: "create/app", Title: "create container app", Stage: steps.StageContainers, Kind: steps.KindCreate, Container: "app", State: steps.Done, Started: at,
				Result: steps.Result{Summary: "created container app (abc123, attempt 0)", Details: []steps.Detail{
					{Key: "container", Value: "abc123"},
					{Key: "spec", Value: "the API server https://api.test:6443 (resourceVersion 4242)"},
					{Key: specVsSentKey, Value: vsSent},
				}}},
		}}
	m := newModel(context.Background(), f, Options{Now: func() time.Time { return epoch }})
	t.Cleanup(m.close)
	m.fmtDur = func(time.Duration) string { return "1.0ms" }
	m.Update(resize(80, 24))
	m.selectStep(2)
	got := ansi.Strip(strings.Join(m.pane.lines(m.view(), 79), "\n"))
	for _, want := range []string{
		"spec vs sent:",
		`≠ command: spec ["sh" "-c" "a; b"], sent ["sh" "-c" "a; b; c"]`,
		"≠ env: +1 names from the kubelet's service links (KUBERNETES_PORT)",
		"≠ mounts: +1 from the kubelet (/etc/hosts)",
		"≠ mounts: 1 of the spec not sent (/data)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("step pane lacks %q:\n%s", want, got)
		}
	}
	checkGolden(t, "specvssent-80x24", frameOf(m))

	// As the spec: one sentence.
	f.steps[1].Result.Details[2].Value = "as the spec (image, command, args, workingDir, env names, mounts, ports)"
	m.ver++
	if got := ansi.Strip(strings.Join(m.pane.lines(m.view(), 79), "\n")); !strings.Contains(got, "spec vs sent:\n    as the spec (image") || strings.Contains(got, "≠") {
		t.Errorf("as the spec:\n%s", got)
	}
}

func TestSplitSpecVsSent(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{vsSent, 4},
		{"image: spec a, sent b", 1},
		{"the spec has no container x", 1},
		{`args: spec ["x; y"], sent ["z"]; restartPolicy: Always, a sidecar`, 2},
	} {
		if got := splitSpecVsSent(tc.in); len(got) != tc.want {
			t.Errorf("%q: %d parts %q, want %d", tc.in, len(got), got, tc.want)
		}
	}
}

func resize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

// frameOf is a model's screen as plain text, lines trimmed.
func frameOf(m *model) string {
	lines := strings.Split(ansi.Strip(m.render()), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n") + "\n"
}

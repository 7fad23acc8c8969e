package predict

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
	"github.com/podstep/podstep/internal/steps"
)

// engine is a scenario's engine on a simulated runtime.
func engine(t *testing.T, name string) (*steps.Engine, *scenario.Scenario) {
	t.Helper()
	sc, err := scenario.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := manifest.Parse(scenario.File(name), sc.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	n := node.Local()
	if b.Node != nil {
		if n, err = node.FromObject(b.Node, "the manifest"); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	zero := int64(0)
	e := steps.New(b, simtest.Client(t, sim.Options{InitRunTime: 20 * time.Millisecond}), steps.Options{
		Config:      podcfg.Options{RootDir: filepath.Join(root, "kubelet"), LogDir: filepath.Join(root, "logs"), CgroupDriver: "cgroupfs"},
		GracePeriod: &zero, PollInterval: 5 * time.Millisecond, InitTimeout: 5 * time.Second,
		MaxRestarts: 1, BackoffScale: 0.001, Settle: 100 * time.Millisecond, Simulated: true, Node: n,
	})
	t.Cleanup(func() { _ = e.Teardown(context.Background()) })
	return e, &sc
}

func play(t *testing.T, name, answers string) (string, *Quiz) {
	t.Helper()
	e, sc := engine(t, name)
	var out bytes.Buffer
	q := New(Options{In: strings.NewReader(answers), Out: &out, Scenario: sc})
	if err := Run(context.Background(), e, q, func() string { return e.PodState().Display }); err != nil {
		t.Fatal(err)
	}
	return out.String(), q
}

// letter is the choice whose text is want in the question printed last in out.
func letter(t *testing.T, out, want string) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^    ([a-d])\) `+regexp.QuoteMeta(want)+`$`).FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no choice %q in:\n%s", want, out)
	}
	return m[len(m)-1][1]
}

// TestPredictAdmit answers the one question of out-of-cpu right, then
// wrong: the verdict, the step's explanation, the scenario's lesson, the
// score.
func TestPredictAdmit(t *testing.T) {
	out, _ := play(t, "out-of-cpu", "")
	if !strings.Contains(out, "? step 1 admit (admit): how does it end?") {
		t.Fatalf("no question about admit:\n%s", out)
	}
	right := letter(t, out, "OutOfcpu")
	wrong := letter(t, out, Succeeds)

	out, q := play(t, "out-of-cpu", right+"\n")
	for _, want := range []string{"✓ right: the step failed: OutOfcpu", "why: ", "kubelet: ", "lesson (out-of-cpu): ", "decided by generalFilter (pkg/kubelet/lifecycle/predicate.go)", "predict: 1 of 1 right"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if q.Right != 1 || q.Asked != 1 {
		t.Errorf("score %d/%d, want 1/1", q.Right, q.Asked)
	}
	out, q = play(t, "out-of-cpu", wrong+"\n")
	if !strings.Contains(out, "✗ wrong: the step failed: OutOfcpu; your answer: it succeeds") || q.Right != 0 || q.Asked != 1 {
		t.Errorf("wrong answer: %d/%d\n%s", q.Right, q.Asked, out)
	}
}

// TestPredictWholeRun answers every question of a pod that runs: each
// creation step is asked once, and the answers end or q stops the asking
// while the run goes on to the end.
func TestPredictWholeRun(t *testing.T) {
	out, q := play(t, "sidecar-init", strings.Repeat("a\n", 40))
	asked := strings.Count(out, "\n? step ")
	if asked < 10 || q.Asked+q.Unknowable != asked {
		t.Fatalf("%d questions, %d graded (%d unknowable):\n%s", asked, q.Asked, q.Unknowable, out)
	}
	for _, want := range []string{"which CRI call does it send first?", "what will STATUS (kubectl get pod) read after it?", "how does it end?"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q question:\n%s", want, out)
		}
	}
	if !regexp.MustCompile(`predict: \d+ of \d+ right`).MatchString(out) {
		t.Errorf("no score:\n%s", out)
	}

	for _, answers := range []string{"a\nq\n", "a\n"} {
		e, sc := engine(t, "sidecar-init")
		var buf bytes.Buffer
		q := New(Options{In: strings.NewReader(answers), Out: &buf, Scenario: sc})
		if err := Run(context.Background(), e, q, func() string { return e.PodState().Display }); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(buf.String(), "\n? step "); n != 2 || !strings.Contains(buf.String(), "no more questions") {
			t.Errorf("answers %q: %d questions, want 2 then none:\n%s", answers, n, buf.String())
		}
		if st := e.PodState().Display; st != "Running" {
			t.Errorf("answers %q: the run stopped at %s", answers, st)
		}
	}
}

// TestPredictBadAnswer: an answer that is no choice is asked again, as
// many times as it takes, and never graded: three bad entries were scored
// as a wrong answer ("it was it succeeds (you said no answer)").
func TestPredictBadAnswer(t *testing.T) {
	out, q := play(t, "out-of-cpu", "z\n7\nzz\nyes\n")
	if strings.Count(out, "is not a choice: type one letter, a to") != 4 {
		t.Errorf("want four refusals:\n%s", out)
	}
	if q.Asked != 0 || strings.Contains(out, "wrong") || strings.Contains(out, "no answer") {
		t.Errorf("bad entries were graded (%d asked):\n%s", q.Asked, out)
	}
}

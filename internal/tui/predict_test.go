package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/predict"
	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/steps"
)

// wrongChoice is the key (1-4) of a choice other than want in the open
// question.
func wrongChoice(t *testing.T, h *harness, want string) string {
	t.Helper()
	for i, c := range h.m.pred.q.Choices {
		if c != want {
			return fmt.Sprint(i + 1)
		}
	}
	t.Fatalf("no wrong choice among %q", h.m.pred.q.Choices)
	return ""
}

// rightChoice is the key (a-d) of choice want in the open question.
func rightChoice(t *testing.T, h *harness, want string) string {
	t.Helper()
	for i, c := range h.m.pred.q.Choices {
		if c == want {
			return string(rune('a' + i))
		}
	}
	t.Fatalf("%q not among %q", want, h.m.pred.q.Choices)
	return ""
}

// TestPredictFrames compares predict mode's screens with goldens: the
// first question, and after a wrong answer the verdict over the next
// question.
func TestPredictFrames(t *testing.T) {
	for _, sz := range sizes {
		suffix := fmt.Sprintf("-%dx%d", sz.w, sz.h)
		t.Run("ask"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
			h.resize(sz.w, sz.h)
			checkGolden(t, "predict-ask"+suffix, h.frame())
		})
		t.Run("wrong"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
			h.resize(sz.w, sz.h)
			h.press(wrongChoice(t, h, predict.Succeeds))
			h.press("space")
			checkGolden(t, "predict-wrong"+suffix, h.frame())
		})
	}
}

// TestPredictStepWaitsForAnswer: space does nothing but say so until the
// question is answered (or skipped); then it runs the step.
func TestPredictStepWaitsForAnswer(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
	h.resize(120, 40)
	for _, k := range []string{"space", "enter", "n"} {
		h.press(k)
		if h.state(1) != steps.Pending || h.m.lastID != 0 {
			t.Fatalf("%s ran step 1 before an answer (state %s)", k, h.state(1))
		}
		if h.m.flash != flashAnswerFirst {
			t.Errorf("%s: flash %q, want %q", k, h.m.flash, flashAnswerFirst)
		}
	}
	if !strings.Contains(h.frame(), "answer first") {
		t.Errorf("the frame does not say to answer first:\n%s", h.frame())
	}
	h.press("2")
	h.press("space")
	if h.state(1) != steps.Done || h.m.lastID != 1 {
		t.Fatalf("after an answer space did not run step 1 (state %s)", h.state(1))
	}
	// Step 2's question: s skips it, then space runs the step ungraded.
	if !h.m.pred.open() || h.m.pred.q.Step.ID != 2 {
		t.Fatalf("no open question about step 2: %+v", h.m.pred.q)
	}
	h.press("s")
	h.press("space")
	if h.state(2) != steps.Done {
		t.Fatalf("after s, space did not run step 2 (state %s)", h.state(2))
	}
	if got := h.m.pred.score.Asked + h.m.pred.score.Unknowable; got != 1 {
		t.Errorf("%d graded, want 1 (the skipped question is not)", got)
	}
}

// TestPredictWrongShowsExplanation: a wrong answer says so, with what it
// was, why (the step's explanation) and the kubelet function; the score
// counts it.
func TestPredictWrongShowsExplanation(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
	h.resize(120, 40)
	if a := h.m.pred.q.Asks; a != predict.AskEnd {
		t.Fatalf("step 1 asks %s, want %s", a, predict.AskEnd)
	}
	k := wrongChoice(t, h, predict.Succeeds)
	you := h.m.pred.q.Choices[k[0]-'1']
	h.press(k)
	h.press("space")
	f := h.frame()
	explain := strings.Fields(h.eng.Steps()[0].Explain)
	for _, want := range []string{
		"step 1: ✗ wrong: it was it succeeds (you said " + you + ")",
		"why: " + strings.Join(explain[:4], " "),
		"kubelet: ",
		"0 of 1 right",
	} {
		if !strings.Contains(f, want) {
			t.Errorf("no %q in\n%s", want, f)
		}
	}
	if h.m.pred.score != (predict.Score{Asked: 1}) {
		t.Errorf("score %+v", h.m.pred.score)
	}
}

// TestPredictLessonAndScore: on a scenario the failing step's verdict
// carries its lesson; at the end the score is on the status line and in
// the Result's Score.
func TestPredictLessonAndScore(t *testing.T) {
	sc, err := scenario.Get("node-selector-mismatch")
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, loadBundle(t, scenarioFile("node-selector-mismatch")), Options{Predict: true, Scenario: &sc})
	h.resize(120, 40)
	h.press(rightChoice(t, h, sc.Expect.Reason))
	h.press("space")
	f := h.frame()
	for _, want := range []string{"✓ right: " + sc.Expect.Reason, "lesson (node-selector-mismatch): ", "fix: ", "predict: 1 of 1 right"} {
		if !strings.Contains(f, want) {
			t.Errorf("no %q in\n%s", want, f)
		}
	}
	if h.m.pred.q != nil {
		t.Errorf("a question after the pod failed: %+v", h.m.pred.q)
	}
}

// TestPredictContinueOff: c says predict mode has it off, and runs nothing.
func TestPredictContinueOff(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
	h.press("1") // answered: c is no longer an answer key
	h.press("c")
	if h.m.flash != flashNoContinue || h.m.lastID != 0 {
		t.Errorf("c: flash %q, last step %d", h.m.flash, h.m.lastID)
	}
	if h.m.pred.q.Picked != 0 {
		t.Errorf("c changed the answer to %d", h.m.pred.q.Picked)
	}
}

// TestPredictOff: without Predict nothing asks and a-d, s do nothing.
func TestPredictOff(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.press("a")
	h.press("space")
	if h.m.pred.q != nil || h.state(1) != steps.Done {
		t.Errorf("question %+v, step 1 %s", h.m.pred.q, h.state(1))
	}
}

// TestQuitPromptNamesCleanupSim: on the simulated runtime the quit prompt
// says how to remove a kept pod there.
func TestQuitPromptNamesCleanupSim(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{})
	h.resize(120, 40)
	h.press("q")
	if f := h.frame(); !strings.Contains(f, "n keeps it for `podstep cleanup --sim`") {
		t.Errorf("the prompt does not name cleanup --sim:\n%s", f)
	}
}

// TestPredictFramesFit: predict mode's frames fit the window, from the
// smallest to wide, through a whole run answered wrong and right.
func TestPredictFramesFit(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/init.yaml")), Options{Predict: true})
	for i := 0; h.m.nextID != 0 && i < 40; i++ {
		h.checkFits(fmt.Sprintf("question %d", h.m.nextID))
		h.press(fmt.Sprint(i%2 + 1))
		h.press("space")
	}
	h.checkFits("end")
	if h.m.nextID != 0 || h.m.pred.score.Asked == 0 {
		t.Errorf("the run did not end answered: next %d, score %+v", h.m.nextID, h.m.pred.score)
	}
}

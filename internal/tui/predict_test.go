package tui

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

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
		"step 1: ✗ wrong: the step succeeded; your answer: " + you,
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
	for _, want := range []string{"✓ right: the step failed: " + sc.Expect.Reason, "lesson (node-selector-mismatch): ", "fix: ", "predict: 1 of 1 right"} {
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

// TestPredictVerdictProgram: at 80x24, in the real event loop, the
// verdict after a wrong answer is read to its end with pgdn while the next
// question stays whole under it and the footer keeps its keys. It used to
// be cut after its first lines with "…" and no way to read the rest
// (pgdn scrolled the hidden step pane).
func TestPredictVerdictProgram(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
	wrong := wrongChoice(t, h, predict.Succeeds)
	tm := teatest.NewTestModel(t, h.m, teatest.WithInitialTermSize(80, 24))
	tm.Send(keyPress(wrong))
	tm.Send(keyPress("space"))
	// The verdict is in, and cut: the frame says what shows the rest.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("more: pgdn")) },
		teatest.WithDuration(10*time.Second))
	for range 12 {
		tm.Send(keyPress("pgdown"))
	}
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*model)
	if final.pred.last == nil || final.pred.q == nil || final.pred.q.Step.ID != 2 {
		t.Fatalf("no verdict on step 1 over a question on step 2: %+v, %+v", final.pred.last, final.pred.q)
	}
	f := h.frame()
	lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
	if len(lines) != 24 {
		t.Errorf("%d lines, want 24:\n%s", len(lines), f)
	}
	ls := final.pred.last.Lines()
	end := strings.Fields(ls[len(ls)-1])
	want := []string{end[len(end)-1], "↑ pgup"}
	for _, c := range final.pred.q.Choices {
		want = append(want, ") "+c)
	}
	for _, w := range want {
		if !strings.Contains(f, w) {
			t.Errorf("after pgdn, no %q in\n%s", w, f)
		}
	}
	for _, w := range []string{"? help", "q quit", "1-4/a-d answer"} {
		if !strings.Contains(lines[len(lines)-1], w) {
			t.Errorf("the footer lacks %q: %q", w, lines[len(lines)-1])
		}
	}
}

// TestPredictVerdictScrolls: on small screens every row of a verdict
// (and of a scenario's lesson at the end) is shown by pgdn, the question's
// choices and the footer's ? and q in every frame, and pgup goes back to
// the verdict's first line.
func TestPredictVerdictScrolls(t *testing.T) {
	sc, err := scenario.Get("node-selector-mismatch")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		w, h   int
		lesson bool // the scenario, answered right: the verdict at the end
	}{
		{"wrong", 80, 24, false},
		{"wrong", 60, 24, false},
		{"wrong", 100, 30, false},
		{"lesson", 80, 24, true},
		{"lesson", 60, 24, true},
	} {
		t.Run(fmt.Sprintf("%s-%dx%d", tc.name, tc.w, tc.h), func(t *testing.T) {
			var h *harness
			if tc.lesson {
				h = newHarness(t, loadBundle(t, scenarioFile(sc.Name)), Options{Predict: true, Scenario: &sc})
				h.press(rightChoice(t, h, sc.Expect.Reason))
			} else {
				h = newHarness(t, loadBundle(t, repoFile("testdata/pods/hello.yaml")), Options{Predict: true})
				h.press(wrongChoice(t, h, predict.Succeeds))
			}
			h.resize(tc.w, tc.h)
			h.press("space")
			if h.m.pred.last == nil {
				t.Fatal("no verdict")
			}
			var rows []string // the verdict's, as the pane wraps it
			for _, l := range h.m.pred.verdictLines(h.m.layout().rightW - 1) {
				rows = append(rows, strings.TrimSpace(ansi.Strip(l)))
			}
			first := h.frame()
			seen := first
			for i := 0; i < 3*len(rows); i++ {
				f := h.frame()
				lines := strings.Split(strings.TrimSuffix(f, "\n"), "\n")
				if len(lines) != tc.h {
					t.Fatalf("%d lines, want %d:\n%s", len(lines), tc.h, f)
				}
				for _, w := range []string{"? help", "q quit"} {
					if !strings.Contains(lines[len(lines)-1], w) {
						t.Errorf("the footer lacks %q: %q", w, lines[len(lines)-1])
					}
				}
				if q := h.m.pred.q; q != nil {
					for _, c := range q.Choices {
						if !strings.Contains(f, ") "+c) {
							t.Errorf("choice %q is not shown:\n%s", c, f)
						}
					}
				}
				seen += f
				h.press("pgdown")
			}
			for _, r := range rows {
				if !strings.Contains(seen, r) {
					t.Errorf("pgdn never shows the verdict's row %q; first frame:\n%s", r, first)
				}
			}
			for range 3 * len(rows) {
				h.press("pgup")
			}
			if f := h.frame(); f != first {
				t.Errorf("pgup back to the top:\n%s\nwant\n%s", f, first)
			}
			// esc hides the verdict at the end (the step pane is back),
			// and only there.
			h.press("esc")
			f := h.frame()
			if hidden := !strings.Contains(f, "─ predict") && strings.Contains(f, "─ step 1 "); hidden != tc.lesson {
				t.Errorf("esc: verdict hidden %v, want %v:\n%s", hidden, tc.lesson, f)
			}
		})
	}
}

package tui

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podstep/podstep/internal/steps"
)

// fakeNode is a proxy's pod (fakeWatch) that also says what the node is
// stuck on (NodeNoter), as watch.Pod's NodeNote does from the PLEG notes.
type fakeNode struct {
	fakeWatch
	mu     sync.Mutex
	note   string
	severe bool
}

func (f *fakeNode) NodeNote() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.note, f.severe
}

func (f *fakeNode) set(note string, severe bool) {
	f.mu.Lock()
	f.note, f.severe = note, severe
	f.mu.Unlock()
}

// The lines watch.PLEGNote.Line says (late, unhealthy).
const (
	plegLate = "pleg: the kubelet's last relist was 31s ago (every 1s when the runtime answers; PLEG turns unhealthy at 3m0s: the node goes NotReady); waiting on ListContainers #7 30s, no answer"
	plegSick = "pleg: the kubelet's last relist was 3m1s ago: PLEG is not healthy (over 3m0s, GenericPLEG.Healthy): the node is NotReady and the kubelet syncs no pod until a relist goes through"
)

// styleOn is the SGR sequence a style starts its text with.
func styleOn(st lipgloss.Style) string { return strings.SplitN(st.Render("x"), "x", 2)[0] }

func newFakeNode() *fakeNode {
	at := epoch
	return &fakeNode{fakeWatch: fakeWatch{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}, changed: make(chan struct{}, 1),
		steps: []steps.Step{{ID: 1, Name: "run-sandbox", Title: "RunPodSandbox #3 31s, no answer", Stage: steps.StageSandbox, Kind: steps.KindRunSandbox,
			State: steps.Running, Started: at}}}}
}

// TestNodeBanner: the node's PLEG note shows as a banner under the header,
// wrapped on two rows at 80 columns, the body one pane shorter so the frame
// stays 24 rows; an unhealthy one in the failure style; a note's control
// characters never reach the terminal; gone when the relists go through
// again (NodeNote says "").
func TestNodeBanner(t *testing.T) {
	f := newFakeNode()
	m := newModel(context.Background(), f, Options{Now: func() time.Time { return epoch }, Keep: true})
	t.Cleanup(m.close)
	m.fmtDur = func(time.Duration) string { return "1.0ms" }
	m.Update(resize(80, 24))
	rows := func() []string { return strings.Split(strings.TrimSuffix(frameOf(m), "\n"), "\n") }
	if fr := frameOf(m); strings.Contains(fr, "pleg:") || len(rows()) != 24 {
		t.Fatalf("a banner without a note, or not 24 rows:\n%s", fr)
	}

	f.set(plegLate, false)
	m.refresh()
	r := rows()
	if len(r) != 24 || !strings.HasPrefix(r[1], "pleg: the kubelet's last relist was 31s ago") || !strings.Contains(r[2], "…") {
		t.Errorf("late: want the banner on rows 2-3 (the second cut with …), 24 rows:\n%s", frameOf(m))
	}
	checkGolden(t, "node-pleg-80x24", frameOf(m))
	if !strings.Contains(m.render(), styleOn(m.st.Warning)+"pleg:") {
		t.Errorf("a late relist is not in the warning style")
	}

	// The smallest window the layout is for: the banner's rows come from
	// the body, the frame stays minH rows.
	m.Update(resize(minW, minH))
	if r := rows(); len(r) != minH || !strings.HasPrefix(r[1], "pleg:") {
		t.Errorf("%dx%d: %d rows, want %d with the banner:\n%s", minW, minH, len(r), minH, frameOf(m))
	}
	m.Update(resize(80, 24))

	f.set(plegSick, true)
	m.refresh()
	if r := rows(); len(r) != 24 || !strings.Contains(r[1], "3m1s ago: PLEG is not healthy") || !strings.Contains(m.render(), styleOn(m.st.Failed)+"pleg:") {
		t.Errorf("unhealthy: want the banner in the failure style:\n%s", frameOf(m))
	}

	f.set("pleg: \x1b[2Jhostile\x07", false)
	m.refresh()
	if out := m.render(); strings.Contains(out, "\x1b[2J") || strings.Contains(out, "\x07") {
		t.Errorf("the note's control characters reached the frame: %q", out)
	}

	f.set("", false) // relisted
	m.refresh()
	if fr := frameOf(m); strings.Contains(fr, "pleg:") || len(rows()) != 24 {
		t.Errorf("relisted: the banner stayed:\n%s", fr)
	}
}

// TestNodeBannerProgram drives the real event loop: a change of the engine
// (Changed) brings the banner up, the next one takes it down.
func TestNodeBannerProgram(t *testing.T) {
	f := newFakeNode()
	m := newModel(context.Background(), f, Options{Now: func() time.Time { return epoch }, Keep: true})
	t.Cleanup(m.close)
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(120, 40))
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("run-sandbox")) },
		teatest.WithDuration(10*time.Second))
	f.set(plegSick, true)
	f.changed <- struct{}{}
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("PLEG is not healthy")) },
		teatest.WithDuration(10*time.Second))
	f.set("", false)
	f.changed <- struct{}{}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if len(f.changed) == 0 {
			break
		}
	}
	time.Sleep(100 * time.Millisecond) // the change read, the frame drawn
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	final := tm.FinalModel(t, teatest.WithFinalTimeout(5*time.Second)).(*model)
	if final.node.line != "" || strings.Contains(frameOf(final), "pleg:") {
		t.Errorf("relisted: the banner stayed:\n%s", frameOf(final))
	}
}

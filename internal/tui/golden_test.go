package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/manifest"
	"github.com/podstep/podstep/internal/steps"
)

var sizes = []struct{ w, h int }{{80, 24}, {120, 40}}

// TestFrames compares whole screens, ANSI stripped, with
// testdata/*.golden (go test ./internal/tui -update rewrites them).
func TestFrames(t *testing.T) {
	for _, sz := range sizes {
		suffix := fmt.Sprintf("-%dx%d", sz.w, sz.h)
		t.Run("first"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{Breaks: []steps.Stage{steps.StageContainers}})
			h.resize(sz.w, sz.h)
			checkGolden(t, "first"+suffix, h.frame())
		})
		t.Run("sandbox"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
			h.resize(sz.w, sz.h)
			for h.m.lastID < 6 {
				h.press("space")
			}
			checkGolden(t, "sandbox"+suffix, h.frame())
		})
		t.Run("failed"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, "testdata/fail.yaml"), Options{})
			h.resize(sz.w, sz.h)
			h.press("c")
			checkGolden(t, "failed"+suffix, h.frame())
		})
		t.Run("unknown-key"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
			h.resize(sz.w, sz.h)
			h.press("x")
			checkGolden(t, "unknown-key"+suffix, h.frame())
		})
		t.Run("help"+suffix, func(t *testing.T) {
			h := newHarness(t, loadBundle(t, repoFile("testdata/pods/hooks.yaml")), Options{})
			h.resize(sz.w, sz.h)
			h.press("?")
			checkGolden(t, "help"+suffix, h.frame())
		})
	}
}

// TestFramesFit checks every line of every frame fits the window, at
// sizes from tiny to wide, through a whole run.
func TestFramesFit(t *testing.T) {
	h := newHarness(t, loadBundle(t, repoFile("testdata/pods/init.yaml")), Options{})
	sizes := append([]struct{ w, h int }{{100, 30}}, fitSizes...)
	h.checkFits("start", sizes...)
	for h.m.nextID != 0 {
		h.press("space")
		for _, mode := range []string{"tab", "tab", "tab"} {
			h.press(mode)
			h.checkFits(fmt.Sprintf("step %d %s", h.m.lastID, h.m.pane.mode), sizes...)
		}
	}
}

// BenchmarkView50Containers renders a frame of a pod with 50 containers,
// all created, at 120x40 (what each spinner tick or keypress costs).
func BenchmarkView50Containers(b *testing.B) {
	var y strings.Builder
	y.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n")
	for i := range 50 {
		fmt.Fprintf(&y, "  - name: c%02d\n    image: docker.io/library/busybox:1.35\n    imagePullPolicy: IfNotPresent\n    command: [\"sh\", \"-c\", \"echo hi %d; sleep 3600\"]\n", i, i)
	}
	bundle, err := manifest.Parse("big.yaml", []byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	h := newHarness(b, bundle, Options{})
	h.resize(120, 40)
	h.press("c")
	if !h.eng.Finished() {
		b.Fatal("the pod was not created")
	}
	if len(h.m.pod.Status.ContainerStatuses) != 50 {
		b.Fatalf("%d container statuses", len(h.m.pod.Status.ContainerStatuses))
	}
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			_ = h.m.View()
		}
	})
	b.Run("cold", func(b *testing.B) {
		// Every frame re-renders the step pane's YAML, as after each step.
		for b.Loop() {
			h.m.ver++
			_ = h.m.View()
		}
	})
}

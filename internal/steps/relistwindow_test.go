package steps_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// TestRelistWindowAfterSlowFirstRelist: when the first relist (every
// container's ContainerStatus) takes longer than several poll intervals,
// the relists it delayed follow at once, so the window ends --settle after
// it began or as soon as the first relist is done, not intervals later. A
// ticker dropped the missed ticks: each relist after a slow first one
// waited a whole interval, and a pod of 1,000 containers stretched its
// 1 s window by 100-300 ms (issue 34). The count of relists is the same.
func TestRelistWindowAfterSlowFirstRelist(t *testing.T) {
	const (
		delay    = 500 * time.Millisecond // each ContainerStatus
		interval = 100 * time.Millisecond
		settle   = 400 * time.Millisecond
	)
	for _, tc := range []struct {
		name       string
		containers int
	}{
		{"one container", 1},
		{"two containers", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "pod.yaml")
			pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: slow-status\n  namespace: default\n  annotations:\n    " +
				sim.AnnotationDelay + "ContainerStatus: " + delay.String() + "\nspec:\n  containers:\n"
			for i := range tc.containers {
				pod += "  - name: c" + string(rune('0'+i)) + "\n    image: docker.io/library/busybox:1.35\n    command: [\"sleep\", \"3600\"]\n"
			}
			if err := os.WriteFile(file, []byte(pod), 0o644); err != nil {
				t.Fatal(err)
			}
			r := stepstest.New(t, file, func(o *steps.Options) { o.PollInterval, o.Settle = interval, settle })
			stepstest.Through(t, r.Engine)
			var relist *steps.Step
			for _, s := range r.Engine.StepsAsRun() {
				if s.Stage == steps.StageContainers && len(s.Calls) > 0 && s.Calls[0].Method == "ListPodSandbox" {
					relist = &s
				}
			}
			if relist == nil {
				t.Fatal("no relist step")
			}
			var firstDone time.Time // the end of the first relist's last ContainerStatus
			var later []time.Time   // the starts of the later relists' ListContainers
			for _, c := range relist.Calls {
				switch {
				case c.Method == "ContainerStatus":
					firstDone = c.Start.Add(c.Duration)
				case c.Method == "ListContainers" && !firstDone.IsZero():
					later = append(later, c.Start)
				}
			}
			if want := int(settle / interval); len(later) != want {
				t.Fatalf("%d relists after the first, want %d (--settle %s every %s)", len(later), want, settle, interval)
			}
			// The first relist took tc.containers × 500 ms, past the whole
			// window: every later relist was due already.
			if span := later[len(later)-1].Sub(firstDone); span > interval*3/2 {
				t.Errorf("the last relist began %s after the first ended, want at once (< %s): the relists were spaced by the interval after a first relist that outlasted the window", span, interval*3/2)
			}
		})
	}
}

package replay

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// TestPlayerPodDelta: a version 2 recording (pod_delta on most step
// lines) plays with the whole pod at every position, back and forth: the
// pod the run's --json-full-pod printer printed after that step.
func TestPlayerPodDelta(t *testing.T) {
	// A wide pod has whole pods kept every keepEvery positions, and the
	// deltas between folded at once.
	for _, file := range []string{"../../internal/scenario/data/crashloop.yaml", stepstest.WideManifest(t, t.TempDir(), 70)} {
		t.Run(filepath.Base(file), func(t *testing.T) { playerPodDelta(t, file) })
	}
}

func playerPodDelta(t *testing.T, file string) {
	run := stepstest.New(t, file, nil)
	eng := run.Engine
	var rec, full bytes.Buffer
	r := record.New(&rec, true)
	fp := report.New(&full, report.JSON)
	fp.SetFullPod(true)
	eng.Subscribe(func(ev steps.Event) { r.Observe(ev); fp.Observe(ev) })
	rt := render.Runtime{Endpoint: run.Client.RuntimeEndpoint, Simulated: true, Why: "test"}
	h := record.Header{Podstep: "test", Manifest: record.ManifestOf(run.Bundle, eng.Redactor())}
	if err := r.Start(h, eng, rt, "default/crashloop"); err != nil {
		t.Fatal(err)
	}
	stepstest.Through(t, eng)
	if err := r.Finish(report.Summary{Pod: "default/crashloop"}); err != nil {
		t.Fatal(err)
	}
	p, err := Load(&rec)
	if err != nil || p.Damage() != nil {
		t.Fatalf("%v, %v", err, p.Damage())
	}
	lines := strings.Split(strings.TrimSuffix(full.String(), "\n"), "\n")
	if p.Len() != len(lines) || p.Header().Version != record.Version {
		t.Fatalf("%d positions (version %d), %d steps run", p.Len(), p.Header().Version, len(lines))
	}
	kept := 0
	for _, rn := range p.runs {
		if rn.pod != nil {
			kept++
		}
	}
	t.Logf("%d positions, %d whole pods kept (every %d)", p.Len(), kept, p.keepEvery)
	for pos := len(lines); pos >= 1; pos-- { // backwards, as p goes back
		var w report.StepJSON
		if err := json.Unmarshal([]byte(lines[pos-1]), &w); err != nil {
			t.Fatal(err)
		}
		p.Seek(pos)
		got := p.PodState()
		g, _ := json.Marshal(report.PodJSON{Phase: got.Status.Phase, Display: got.Display, Ready: got.Ready, Restarts: got.Restarts, Status: got.Status})
		want, _ := json.Marshal(w.Pod)
		if !bytes.Equal(g, want) {
			t.Fatalf("at %d: pod\n%s\nwant\n%s", pos, g, want)
		}
	}
}

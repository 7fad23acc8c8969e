package timeline

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/record"
	rrender "github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

// TestPagePodDelta: the page of a version 2 recording (pod_delta on most
// step lines) is the page of the same recording with the whole pod on
// every step line, as version 1 had it, byte for byte but the version.
func TestPagePodDelta(t *testing.T) {
	run := stepstest.New(t, "../../internal/scenario/data/crashloop.yaml", nil)
	eng := run.Engine
	var rec, full bytes.Buffer
	r := record.New(&rec, false)
	fp := report.New(&full, report.JSON)
	fp.SetFullPod(true)
	eng.Subscribe(func(ev steps.Event) { r.Observe(ev); fp.Observe(ev) })
	rt := rrender.Runtime{Endpoint: run.Client.RuntimeEndpoint, Simulated: true, Why: "test"}
	if err := r.Start(record.Header{Podstep: "test", Manifest: record.ManifestOf(run.Bundle, eng.Redactor())}, eng, rt, "default/crashloop"); err != nil {
		t.Fatal(err)
	}
	stepstest.Through(t, eng)
	if err := r.Finish(report.Summary{Pod: "default/crashloop"}); err != nil {
		t.Fatal(err)
	}
	// The same recording as version 1 wrote it: each step line whole.
	whole := strings.Split(strings.TrimSuffix(full.String(), "\n"), "\n")
	lines := strings.Split(strings.TrimSuffix(rec.String(), "\n"), "\n")
	lines[0] = strings.Replace(lines[0], `"version":2,`, `"version":1,`, 1)
	deltas := 0
	for i, n := 0, 0; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], `{"type":"step",`) {
			if strings.Contains(lines[i], `"pod_delta":`) {
				deltas++
			}
			lines[i] = whole[n]
			n++
		}
	}
	v1 := []byte(strings.Join(lines, "\n") + "\n")
	if deltas == 0 || bytes.Contains(v1, []byte(`"pod_delta":`)) {
		t.Fatalf("%d pod_delta lines in the recording; the v1 copy has one: %v", deltas, bytes.Contains(v1, []byte(`"pod_delta":`)))
	}
	page := func(data []byte) string {
		rd, err := record.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		p := New("crashloop.rec", rd.Header())
		for {
			ev, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			p.Add(ev)
		}
		var out bytes.Buffer
		if err := p.WriteHTML(&out); err != nil {
			t.Fatal(err)
		}
		return strings.Replace(out.String(), "format v1", "format v2", 1)
	}
	if got, want := page(rec.Bytes()), page(v1); got != want {
		t.Errorf("the page of the v2 recording differs from the v1 one's (%d and %d bytes)", len(got), len(want))
	}
}

package record

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/steps"
	"github.com/podstep/podstep/internal/steps/stepstest"
)

func repoFile(p string) string { return filepath.Join("..", "..", p) }

// recordRun runs the manifest file on the simulated runtime through the
// whole creation and teardown, recording it, and returns the recording,
// the -o json output of the same run and the engine.
func recordRun(t testing.TB, file string, compress bool) (rec, out []byte, eng *steps.Engine) {
	t.Helper()
	var buf bytes.Buffer
	r := New(&buf, compress)
	out, eng = recordWith(t, file, r, r.Observe)
	return buf.Bytes(), out, eng
}

// recordWith runs file into the recorder r, whose Observe observe calls,
// and returns the -o json output of the run and the engine.
func recordWith(t testing.TB, file string, r *Recorder, observe func(steps.Event)) ([]byte, *steps.Engine) {
	t.Helper()
	run := stepstest.New(t, file, nil)
	b, c, eng := run.Bundle, run.Client, run.Engine
	var outBuf bytes.Buffer
	printer := report.New(&outBuf, "json")
	eng.Subscribe(printer.Observe)
	eng.Subscribe(observe)
	rt := render.Runtime{Endpoint: c.RuntimeEndpoint, Simulated: true, Why: "test"}
	pod := b.Pod.Namespace + "/" + b.Pod.Name
	printer.Start(rt, pod)
	h := Header{Podstep: "test", Host: "host", Runtime: Runtime{Endpoint: c.RuntimeEndpoint, Simulated: true},
		Manifest: ManifestOf(b, eng.Redactor())}
	if err := r.Start(h, eng, rt, pod); err != nil {
		t.Fatal(err)
	}
	stepstest.Through(t, eng)
	sum := report.Summary{Pod: pod, UID: string(b.Pod.UID), Outcome: "running", Display: eng.PodState().Display}
	printer.Finish(sum)
	if err := r.Finish(sum); err != nil {
		t.Fatal(err)
	}
	return outBuf.Bytes(), eng
}

// readAll reads every event of a recording.
func readAll(t testing.TB, data []byte) (Header, []Event, error) {
	t.Helper()
	rd, err := NewReader(bytes.NewReader(data))
	if err != nil {
		return Header{}, nil, err
	}
	var evs []Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return rd.Header(), evs, nil
		}
		if err != nil {
			return rd.Header(), evs, err
		}
		evs = append(evs, ev)
	}
}

// TestRoundTrip records runs of test pods, plain and gzipped, and reads
// them back: the header, every line type in order, and the start, step and
// summary lines byte for byte what -o json printed of the same run.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		file     string
		compress bool
	}{
		{"testdata/pods/hello.yaml", false},
		{"testdata/pods/init.yaml", true},
		{"testdata/pods/hooks.yaml", false},
		{"internal/scenario/data/crashloop.yaml", true},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			rec, out, eng := recordRun(t, repoFile(tc.file), tc.compress)
			if tc.compress != bytes.HasPrefix(rec, []byte{0x1f, 0x8b}) {
				t.Fatalf("compress %v, but the recording starts %q", tc.compress, rec[:2])
			}
			h, evs, err := readAll(t, rec)
			if err != nil {
				t.Fatal(err)
			}
			if h.Format != Format || h.Version != Version || h.Podstep != "test" || h.Manifest.Pod == nil || h.Recorded.IsZero() {
				t.Errorf("header %+v", h)
			}
			var printed []string
			seen := map[string]int{}
			for _, ev := range evs {
				seen[ev.Type]++
				if ev.Type == TypeStart || ev.Type == TypeStep || ev.Type == TypeSummary {
					printed = append(printed, string(ev.Raw))
				}
			}
			want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if strings.Join(printed, "\n") != strings.Join(want, "\n") {
				t.Errorf("start/step/summary lines differ from -o json:\n got %d lines\nwant %d lines", len(printed), len(want))
			}
			ran := 0
			for _, s := range eng.Steps() {
				if s.State == steps.Done || s.State == steps.Failed {
					ran++
				}
			}
			if seen[TypeStep] != ran || seen[TypeStepStarted] != ran {
				t.Errorf("%d step and %d step-started lines for %d steps run", seen[TypeStep], seen[TypeStepStarted], ran)
			}
			if seen[TypeCall] != seen[TypeCallSent] || seen[TypeCall] == 0 {
				t.Errorf("%d call lines, %d call-sent", seen[TypeCall], seen[TypeCallSent])
			}
			if evs[0].Type != TypeStart || evs[1].Type != TypePlan || evs[len(evs)-1].Type != TypeSummary {
				t.Errorf("order: first %s, %s; last %s", evs[0].Type, evs[1].Type, evs[len(evs)-1].Type)
			}
		})
	}
}

// TestPlanLines: applying the plan lines in order gives the engine's final
// plan (names, titles, skipped steps), through restarts and teardown.
func TestPlanLines(t *testing.T) {
	for _, file := range []string{"internal/scenario/data/crashloop.yaml", "internal/scenario/data/init-fails-never.yaml", "testdata/pods/hello.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			rec, _, eng := recordRun(t, repoFile(file), false)
			_, evs, err := readAll(t, rec)
			if err != nil {
				t.Fatal(err)
			}
			var plan []report.PlanStepJSON
			lines := 0
			for _, ev := range evs {
				if ev.Plan == nil {
					continue
				}
				lines++
				if ev.Plan.From > len(plan)+1 {
					t.Fatalf("plan line from %d, the plan has %d steps", ev.Plan.From, len(plan))
				}
				plan = append(plan[:ev.Plan.From-1], ev.Plan.Steps...)
			}
			final := eng.Steps()
			if len(plan) != len(final) {
				t.Fatalf("replayed plan has %d steps, the engine %d", len(plan), len(final))
			}
			for i, s := range final {
				p := plan[i]
				if p.ID != s.ID || p.Name != s.Name || p.Title != s.Title || (s.State == steps.Skipped) != (p.State == steps.Skipped) {
					t.Errorf("step %d: replayed %d %s %q %s, engine %d %s %q %s", i+1, p.ID, p.Name, p.Title, p.State, s.ID, s.Name, s.Title, s.State)
				}
				if p.Mirrors == "" || p.Explain == "" {
					t.Errorf("step %s: no mirrors or explain", p.Name)
				}
			}
			if strings.Contains(file, "crashloop") && lines < 3 {
				t.Errorf("crash loop: %d plan lines, want the first, one per restart and the teardown", lines)
			}
		})
	}
}

// TestLogLines: the container's log lines are recorded, per attempt.
func TestLogLines(t *testing.T) {
	rec, _, _ := recordRun(t, repoFile("internal/scenario/data/crashloop.yaml"), false)
	_, evs, err := readAll(t, rec)
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[int]bool{}
	for _, ev := range evs {
		if ev.Log != nil {
			if ev.Log.Container != "app" || ev.Log.Line != "crashing" || ev.Log.Stream != "stdout" || ev.Log.Time == "" {
				t.Errorf("log line %+v", *ev.Log)
			}
			attempts[ev.Log.Attempt] = true
		}
	}
	if len(attempts) != 3 {
		t.Errorf("log lines of attempts %v, want 0, 1 and 2", attempts)
	}
}

// TestCutRecording: a recording cut anywhere reads up to the cut, then says
// where; cut at a line end (a killed run), it says the summary is missing.
// A gzipped recording that was never closed (killed) reads every line
// flushed.
func TestCutRecording(t *testing.T) {
	rec, _, _ := recordRun(t, repoFile("testdata/pods/hello.yaml"), false)
	lines := bytes.SplitAfter(rec, []byte{'\n'})
	whole := len(lines) - 1 // the last element is empty
	for _, tc := range []struct {
		name  string
		data  []byte
		lines int // events read before the error (the header excluded)
		why   string
		line  int
	}{
		{"cut at a line end", bytes.Join(lines[:6], nil), 5, "ends without a summary line", 7},
		{"cut inside a line", rec[:len(bytes.Join(lines[:6], nil))+40], 5, "the file ends inside this line, after 40 bytes", 7},
		{"garbage line", append(append(bytes.Join(lines[:3], nil), "{not json\n"...), bytes.Join(lines[3:], nil)...), 2, "not a JSON object", 4},
		{"line without type", append(bytes.Join(lines[:3], nil), "{\"id\":3}\n"...), 2, `without a "type"`, 4},
		{"step that does not decode", append(bytes.Join(lines[:3], nil), "{\"type\":\"step\",\"id\":\"x\"}\n"...), 2, `a "step" line that does not decode`, 4},
		{"second header", append(bytes.Join(lines[:3], nil), lines[0]...), 2, "a second header", 4},
		{"line after the summary", append(append([]byte{}, rec...), lines[1]...), whole - 1, "after the summary", whole + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, evs, err := readAll(t, tc.data)
			var de *DamageError
			if !errors.As(err, &de) {
				t.Fatalf("error %v (%T), want a DamageError", err, err)
			}
			if len(evs) != tc.lines || de.Line != tc.line || !strings.Contains(de.Why, tc.why) {
				t.Errorf("read %d events, error %q; want %d events, line %d, %q", len(evs), err, tc.lines, tc.line, tc.why)
			}
			if want := int64(len(bytes.Join(lines[:min(tc.line-1, whole)], nil))); tc.name != "line after the summary" && de.Offset != want {
				t.Errorf("offset %d, want %d", de.Offset, want)
			}
		})
	}

	t.Run("gzip never closed", func(t *testing.T) {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		for _, l := range lines[:6] {
			if _, err := gz.Write(l); err != nil {
				t.Fatal(err)
			}
			if err := gz.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		_, evs, err := readAll(t, buf.Bytes())
		var de *DamageError
		if !errors.As(err, &de) || len(evs) != 5 || !strings.Contains(de.Why, "without a summary") {
			t.Errorf("read %d events, error %v; want 5 and a missing summary", len(evs), err)
		}
	})
	t.Run("gzip cut inside", func(t *testing.T) {
		var buf bytes.Buffer
		gz := gzip.NewWriter(&buf)
		if _, err := gz.Write(rec); err != nil {
			t.Fatal(err)
		}
		if err := gz.Close(); err != nil {
			t.Fatal(err)
		}
		_, evs, err := readAll(t, buf.Bytes()[:buf.Len()/2])
		var de *DamageError
		if !errors.As(err, &de) || len(evs) == 0 {
			t.Errorf("read %d events, error %v; want some events and a DamageError", len(evs), err)
		}
	})
}

// TestNotRecording: inputs that are not recordings are one clear error.
func TestNotRecording(t *testing.T) {
	manifestYAML, _ := os.ReadFile(repoFile("testdata/pods/hello.yaml"))
	var gzManifest bytes.Buffer
	gz := gzip.NewWriter(&gzManifest)
	if _, err := gz.Write(manifestYAML); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		why  string
	}{
		{"empty", nil, "the file is empty"},
		{"png", []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10"), "binary data"},
		{"pod manifest", manifestYAML, `line 1 is not a JSON object: it starts "# The simplest pod`},
		{"gzipped manifest", gzManifest.Bytes(), "line 1 is not a JSON object"},
		{"asciicast", []byte(`{"version": 2, "width": 80, "height": 24}` + "\n[0.1, \"o\", \"hi\"]\n"), `not a header (type "", format "")`},
		{"other json", []byte(`{"type":"header","format":"other","version":1}` + "\n"), `format "other"`},
		{"version 0", []byte(`{"type":"header","format":"podstep-recording","version":0}` + "\n"), "not a format version"},
		{"json array", []byte("[1,2]\n"), "not a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReader(bytes.NewReader(tc.data))
			var ne *NotRecordingError
			if !errors.As(err, &ne) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %v (%T), want a NotRecordingError saying %q", err, err, tc.why)
			}
		})
	}
	_, err := NewReader(strings.NewReader(`{"type":"header","format":"podstep-recording","version":99}` + "\n"))
	var ve *VersionError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "version 99 is newer than this podstep reads (2 and older): upgrade podstep") {
		t.Errorf("newer version: %v", err)
	}
}

// TestUnknownLineType: a line type a newer podstep adds within the same
// version is passed on raw, and reading goes on.
func TestUnknownLineType(t *testing.T) {
	rec, _, _ := recordRun(t, repoFile("testdata/pods/hello.yaml"), false)
	i := bytes.IndexByte(rec, '\n') + 1
	data := append(append(append([]byte{}, rec[:i]...), `{"type":"future","x":1}`+"\n"...), rec[i:]...)
	_, evs, err := readAll(t, data)
	if err != nil {
		t.Fatal(err)
	}
	if evs[0].Type != "future" || string(evs[0].Raw) != `{"type":"future","x":1}` || evs[len(evs)-1].Summary == nil {
		t.Errorf("first event %+v, last %s", evs[0], evs[len(evs)-1].Type)
	}
}

// TestFlushedPerStep: after each step, the file (plain, or gzip not yet
// closed) reads up to that step's line, without Finish or Close.
func TestFlushedPerStep(t *testing.T) {
	for _, compress := range []bool{false, true} {
		var buf bytes.Buffer
		r := New(&buf, compress)
		n := 0
		recordWith(t, repoFile("testdata/pods/init.yaml"), r, func(ev steps.Event) {
			r.Observe(ev)
			if ev.Kind != steps.StepDone {
				return
			}
			n++
			_, evs, err := readAll(t, bytes.Clone(buf.Bytes()))
			var de *DamageError
			if !errors.As(err, &de) || !strings.Contains(de.Why, "without a summary") {
				t.Fatalf("compress %v, after step %d: %v", compress, ev.Step.ID, err)
			}
			last := 0
			for _, e := range evs {
				if e.Step != nil {
					last = e.Step.ID
				}
			}
			if last != ev.Step.ID {
				t.Fatalf("compress %v: after step %d the file's last step is %d", compress, ev.Step.ID, last)
			}
		})
		if n < 15 {
			t.Errorf("%d steps", n)
		}
	}
}

// TestBadDurations: a duration that is negative or beyond time.Duration's
// range is refused at read, with the line and the field (issue 34: diff
// printed "-9223372036854.78s" for one).
func TestBadDurations(t *testing.T) {
	rec, _, _ := recordRun(t, repoFile("testdata/pods/hello.yaml"), false)
	lines := bytes.Split(bytes.TrimSuffix(rec, []byte("\n")), []byte("\n"))
	find := func(typ string) int {
		for i, l := range lines {
			if bytes.HasPrefix(l, []byte(`{"type":"`+typ+`"`)) && (typ != "step" || bytes.Contains(l, []byte(`"calls":[{`))) {
				return i
			}
		}
		t.Fatalf("no %s line", typ)
		return 0
	}
	for _, tc := range []struct {
		name, typ string
		re, to    string
		wantField string
	}{
		{"step negative", "step", `"duration_ms":[0-9.e-]+,"calls"`, `"duration_ms":-9223372036854775,"calls"`, "with duration_ms -9.223372036854776e+15"},
		{"call in step huge", "step", `("code":"\w+","started":"[^"]*",)"duration_ms":[0-9.e-]+`, `${1}"duration_ms":1e300`, "with calls[0].duration_ms 1e+300"},
		{"call line negative", "call", `"duration_ms":[0-9.e-]+`, `"duration_ms":-1`, "with duration_ms -1: expected a duration of 0 to 9223372036854 ms"},
		{"summary", "summary", `"cri_ms":[0-9.e-]+`, `"cri_ms":-0.5`, "with timing.cri_ms -0.5"},
		{"summary overhead", "summary", `"overhead_ms":[0-9.e-]+`, `"overhead_ms":-1e20`, "with timing.overhead_ms -1e+20"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := find(tc.typ)
			re := regexp.MustCompile(tc.re)
			if !re.Match(lines[i]) {
				t.Fatalf("%s line has no %s: %s", tc.typ, tc.re, lines[i])
			}
			bad := append([][]byte{}, lines...)
			bad[i] = re.ReplaceAll(lines[i], []byte(tc.to))
			_, _, err := readAll(t, append(bytes.Join(bad, []byte("\n")), '\n'))
			var de *DamageError
			if !errors.As(err, &de) || de.Line != i+1 || !strings.Contains(de.Why, tc.wantField) {
				t.Errorf("err %v; want a *DamageError at line %d with %q", err, i+1, tc.wantField)
			}
		})
	}
}

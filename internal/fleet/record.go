package fleet

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/outfile"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
)

// RecordingName is the file --record DIR writes for a node.
func RecordingName(node string) string { return safeName(node) + ".podstep.gz" }

// writeRecording writes a node's run as a podstep recording (replayable
// with `podstep replay`, comparable with `podstep diff`), rebuilt from the
// runner's JSON output: the header (the manifest and node the runner was
// given), the start line, each step's calls and the step, the summary.
// The runner's JSON holds no plan of steps not taken, no container log
// lines and no requests sent before a step's calls: those are not in it.
func writeRecording(dir string, r *Result, podYAML, nodeYAML string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, RecordingName(r.Node))
	// A new file renamed into place (outfile.Write): a file already there,
	// whoever owns it, is replaced, not written into.
	return file, outfile.Write(file, outfile.Options{}, func(f io.Writer) error {
		return writeRecordingTo(f, file, r, podYAML, nodeYAML)
	})
}

// writeRecordingTo writes the recording of writeRecording to f.
func writeRecordingTo(f io.Writer, file string, r *Result, podYAML, nodeYAML string) error {
	gz := gzip.NewWriter(f)
	bw := bufio.NewWriter(gz)
	enc := json.NewEncoder(bw)
	var pod corev1.Pod
	_ = yaml.Unmarshal([]byte(firstDoc(podYAML)), &pod)
	var node corev1.Node
	_ = yaml.Unmarshal([]byte(nodeYAML), &node)
	h := record.Header{Type: record.TypeHeader, Format: record.Format, Version: record.Version,
		Podstep: "podstep fleet", Recorded: recorded(r), Host: r.Node, OS: "linux", Output: report.JSON,
		Flags:    map[string]string{"filename": "pod.yaml (podstep fleet)"},
		Manifest: record.Manifest{File: "pod.yaml", Pod: &pod},
		Node:     &record.Node{Source: "the API server (podstep fleet)", Object: &node}}
	rt := render.Runtime{Endpoint: r.Endpoint}
	if r.Start != nil {
		rt = *r.Start
	}
	h.Runtime = record.Runtime{Endpoint: rt.Endpoint, Simulated: rt.Simulated, Why: rt.Why}
	if err := enc.Encode(h); err != nil {
		return err
	}
	pname := pod.Namespace + "/" + pod.Name
	if r.Summary != nil {
		pname = r.Summary.Pod
	}
	_ = enc.Encode(record.Start{Type: record.TypeStart, Pod: pname, Runtime: rt})
	plan := record.Plan{Type: record.TypePlan, From: 1}
	for _, s := range r.Steps {
		plan.Steps = append(plan.Steps, report.PlanStepJSON{ID: s.ID, Stage: s.Stage, Name: s.Name, Title: s.Title,
			Container: s.Container, Mirrors: s.Mirrors, State: s.State})
	}
	_ = enc.Encode(plan)
	for _, s := range r.Steps {
		for _, c := range s.Calls {
			_ = enc.Encode(record.Call{Type: record.TypeCall, Step: s.ID, CallJSON: c})
		}
		_ = enc.Encode(s)
	}
	if r.Summary != nil {
		_ = enc.Encode(struct {
			Type string `json:"type"`
			report.Summary
		}{record.TypeSummary, *r.Summary})
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("recording %s: %w", file, err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("recording %s: %w", file, err)
	}
	return nil
}

func recorded(r *Result) time.Time {
	if len(r.Steps) > 0 {
		return r.Steps[0].Started
	}
	return time.Now()
}

// firstDoc is the first YAML document of a stream.
func firstDoc(s string) string {
	for i := 0; i+4 <= len(s); i++ {
		if s[i:i+4] == "---\n" && (i == 0 || s[i-1] == '\n') {
			if i == 0 {
				continue
			}
			return s[:i]
		}
	}
	return s
}

package diff

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/steps"
)

// Call is one CRI call of a recording, with the step it belongs to.
type Call struct {
	// Step is the recorded step's id, StepName its name ("create/app").
	Step     int         `json:"step"`
	StepName string      `json:"step_name"`
	Stage    steps.Stage `json:"stage"`
	// Container is the container the call is about: the step's, else the
	// one whose ID the request names ("" for pod-wide calls).
	Container string          `json:"container,omitempty"`
	Method    string          `json:"method"`
	Code      string          `json:"code"`
	Request   json.RawMessage `json:"-"`
	Response  json.RawMessage `json:"-"`
	// Started and DurationMs are the call's (the first of a folded run).
	Started    time.Time `json:"-"`
	DurationMs float64   `json:"duration_ms"`
	// Count is how many identical calls in a row this entry stands for
	// (polling); 1 for most.
	Count int `json:"count"`
	// Fields are the request's fields, normalised.
	Fields []Field `json:"-"`
}

// Key is what the alignment matches calls on.
func (c *Call) Key() string { return c.Method + "\x00" + c.Container }

// StageTime is the time a recording spent in one stage.
type StageTime struct {
	Stage steps.Stage `json:"stage"`
	// Ms is the sum of the stage's step durations, CRIMs of its calls'.
	Ms    float64 `json:"ms"`
	CRIMs float64 `json:"cri_ms"`
	Calls int     `json:"calls"`
}

// Recording is what a comparison reads of one recording.
type Recording struct {
	// Name is how the recording is named in the output (its path).
	Name   string        `json:"name"`
	Header record.Header `json:"-"`
	// Calls are in the order they were made, before folding.
	Calls  []*Call     `json:"-"`
	Stages []StageTime `json:"-"`
	// Partial says the requests hold some of their fields only (a kubelet
	// trace, ReadTrace): fields it lacks are not compared.
	Partial bool `json:"-"`
	// FromManifest says the header's pod is the manifest the run loaded
	// (podstep run -f: its "filename" flag), not the pod as a kubelet's
	// calls showed it (podstep proxy --record), which cannot tell whether
	// two recordings are of the same manifest.
	FromManifest bool `json:"-"`
}

// stepInfo is what the steps and plan lines say about a step id.
type stepInfo struct {
	name      string
	stage     steps.Stage
	container string
}

// MaxCalls is the most calls diff reads from one recording or trace: the
// alignment's time grows with the product of the two sides' entries (at
// 20,000 a side, seconds), its memory linearly.
const MaxCalls = 20000

func tooManyCalls(name string) error {
	return fmt.Errorf("%s: more than %d CRI calls: diff compares recordings of at most %d calls (a pod's run has a few hundred)", name, MaxCalls, MaxCalls)
}

// Read reads a whole recording. A recording that is not one, is of a newer
// format, or is damaged (cut, or a line that does not decode) is an error:
// a comparison with half a run would report differences that are not there.
func Read(name string, r io.Reader) (*Recording, error) {
	rd, err := record.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	rec := &Recording{Name: name, Header: rd.Header()}
	rec.FromManifest = rec.Header.Manifest.Pod != nil && rec.Header.Flags["filename"] != ""
	info := map[int]stepInfo{}
	stageMs := map[steps.Stage]float64{}
	var order []steps.Stage
	addStage := func(st steps.Stage) {
		if _, ok := stageMs[st]; !ok {
			stageMs[st] = 0
			order = append(order, st)
		}
	}
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		switch {
		case ev.Plan != nil:
			for _, s := range ev.Plan.Steps {
				info[s.ID] = stepInfo{name: s.Name, stage: s.Stage, container: s.Container}
			}
		case ev.StepStarted != nil:
			in := info[ev.StepStarted.ID]
			in.name = ev.StepStarted.Name
			info[ev.StepStarted.ID] = in
		case ev.Call != nil:
			in := info[ev.Call.Step]
			c := &Call{Step: ev.Call.Step, StepName: in.name, Stage: in.stage, Container: in.container,
				Method: ev.Call.Method, Code: ev.Call.Code, Request: ev.Call.Request, Response: ev.Call.Response,
				Started: ev.Call.Started, DurationMs: ev.Call.DurationMs, Count: 1}
			rec.Calls = append(rec.Calls, c)
			if len(rec.Calls) > MaxCalls {
				return nil, tooManyCalls(name)
			}
		case ev.Step != nil:
			s := ev.Step
			info[s.ID] = stepInfo{name: s.Name, stage: s.Stage, container: s.Container}
			addStage(s.Stage)
			stageMs[s.Stage] += s.DurationMs
			// The calls' lines came before their step's line, when the
			// step's stage was perhaps not yet known: fill it in.
			for _, c := range rec.Calls {
				if c.Step == s.ID {
					c.StepName, c.Stage = s.Name, s.Stage
					if c.Container == "" {
						c.Container = s.Container
					}
				}
			}
		}
	}
	for _, st := range order {
		t := StageTime{Stage: st, Ms: stageMs[st]}
		for _, c := range rec.Calls {
			if c.Stage == st {
				t.CRIMs += c.DurationMs
				t.Calls++
			}
		}
		rec.Stages = append(rec.Stages, t)
	}
	return rec, nil
}

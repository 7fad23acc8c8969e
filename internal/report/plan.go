package report

import (
	"encoding/json"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/steps"
)

// PlanStepJSON is one step of the plan as a recording lists it: the fields
// `podstep plan -o json` prints (id, stage, name, title, mirrors, explain,
// requests), plus the container and the step's state when it was listed.
type PlanStepJSON struct {
	ID        int           `json:"id"`
	Stage     steps.Stage   `json:"stage"`
	Name      string        `json:"name"`
	Title     string        `json:"title"`
	Container string        `json:"container,omitempty"`
	Mirrors   string        `json:"mirrors"`
	Explain   string        `json:"explain"`
	State     steps.State   `json:"state"`
	Requests  []RequestJSON `json:"requests,omitempty"`
	// Stops say that a run will stop at this step and why (podstep plan
	// only: Engine.Stops).
	Stops []steps.Stop `json:"stops,omitempty"`
	// Notes, on the first step only, say what podstep did with the file
	// beyond its Pod: the controller and API-server rules that made the
	// pod from a workload (function and file), and the skipped documents.
	Notes []string `json:"notes,omitempty"`
}

// RequestJSON is one CRI request a step will send: the protobuf JSON of the
// message, redacted (absent when it cannot be built yet), and its note.
type RequestJSON struct {
	Method  string          `json:"method"`
	Note    string          `json:"note,omitempty"`
	Request json.RawMessage `json:"request,omitempty"`
}

// PlanStep converts a step of the plan. Its requests are the step's
// Requests, which the engine has already redacted.
func PlanStep(s steps.Step) PlanStepJSON {
	return PlanStepJSON{ID: s.ID, Stage: s.Stage, Name: s.Name, Title: s.Title, Container: s.Container,
		Mirrors: s.Mirrors, Explain: s.Explain, State: s.State, Requests: Requests(s.Requests)}
}

// Requests converts a step's planned requests.
func Requests(reqs []steps.Request) []RequestJSON {
	if len(reqs) == 0 {
		return nil
	}
	out := make([]RequestJSON, len(reqs))
	for i, r := range reqs {
		out[i] = RequestJSON{Method: r.Method, Note: r.Note, Request: render.ProtoJSON(r.Message)}
	}
	return out
}

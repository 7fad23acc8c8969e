// Package scenario is podstep's built-in catalogue of classic pod failures
// for workshops: each scenario is a manifest (data/NAME.yaml), its expected
// outcome (data/NAME.expect, checked by the engine's tests on the simulated
// runtime and by the integration suite on containerd) and a lesson
// (data/NAME.lesson): what goes wrong, which kubelet v1.37 function decides
// it, what `kubectl describe pod` would show and how to fix it. The files are
// embedded, so an installed podstep has them (`podstep scenarios`,
// `podstep run --scenario NAME`).
package scenario

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/podstep/podstep/internal/safe"
)

//go:embed data
var data embed.FS

// Dir is the catalogue's directory in the repository, relative to its root
// (tests and scripts read the files from there).
const Dir = "internal/scenario/data"

// Scenario is one entry of the catalogue.
type Scenario struct {
	// Name is the scenario's name: its files' base name.
	Name string `json:"name"`
	// Manifest is the pod manifest (multi-document YAML), as stored.
	Manifest []byte `json:"-"`
	// Expect is where the run ends on the simulated runtime.
	Expect Expect `json:"expect"`
	// Lesson is what the scenario teaches.
	Lesson Lesson `json:"lesson"`
}

// Expect is the part of a NAME.expect file a reader of the catalogue needs:
// where the pod fails (empty for a pod that runs), the kubelet's reason,
// the pod's STATUS column and phase, and podstep's exit code. The engine's
// tests read the whole file strictly (internal/steps).
type Expect struct {
	Stage        string `json:"stage,omitempty"`
	Step         string `json:"step,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message,omitempty"`
	Display      string `json:"display"`
	Phase        string `json:"phase"`
	ExitCode     int    `json:"exit_code"`
	FeatureGates string `json:"feature_gates,omitempty"`
}

// Lesson is a NAME.lesson file.
type Lesson struct {
	// Story is one line for the list.
	Story string `json:"story"`
	// Watch are what to look at while it runs.
	Watch []string `json:"watch"`
	// Wrong says what goes wrong (for a scenario that runs: what it shows).
	Wrong string `json:"wrong"`
	// Kubelet is the kubelet v1.37 function that decides it.
	Kubelet Func `json:"kubelet"`
	// Describe is what `kubectl describe pod` would show.
	Describe Describe `json:"describe"`
	// Fix says how to fix it.
	Fix string `json:"fix"`
	// Reason is the kubelet's reason at the failed step ("" for a pod that
	// runs); a test checks it is the expectation's.
	Reason string `json:"reason,omitempty"`
	// Exit is podstep's exit code; a test checks it is the expectation's.
	Exit int `json:"exit"`
	// Flags are podstep flags worth adding (e.g. --backoff-scale 0.1).
	Flags []string `json:"flags,omitempty"`
}

// Func names a function of the kubelet's source (k8s.io/kubernetes v1.37):
// Function is "Type.Method" or "Func", File its path in the repository.
type Func struct {
	Function string `json:"function"`
	File     string `json:"file"`
}

// String is "Function (File)".
func (f Func) String() string { return f.Function + " (" + f.File + ")" }

// Describe is what `kubectl describe pod` shows: the STATUS column
// (`kubectl get pod`) and the kubelet's events.
type Describe struct {
	Status string  `json:"status"`
	Events []Event `json:"events"`
}

// Event is one kubelet event; Message may be the beginning of the
// message when the rest names the pod's UID.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// All is the catalogue, sorted by name.
func All() ([]Scenario, error) {
	ents, err := fs.ReadDir(data, "data")
	if err != nil {
		return nil, fmt.Errorf("scenarios: %w", err)
	}
	var out []Scenario
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".yaml")
		if !ok {
			continue
		}
		s, err := load(name)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Names are the scenarios' names, sorted (shell completion).
func Names() []string {
	ents, _ := fs.ReadDir(data, "data")
	var out []string
	for _, e := range ents {
		if name, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// NotFoundError is a name that is not in the catalogue.
type NotFoundError struct {
	Name    string
	Similar []string // names close to it
}

func (e *NotFoundError) Error() string {
	msg := fmt.Sprintf("no scenario %q", safe.Cut(e.Name))
	if len(e.Similar) > 0 {
		msg += " (did you mean " + strings.Join(e.Similar, ", ") + "?)"
	}
	return msg + "; podstep scenarios lists them"
}

// Get is the scenario named name, or a *NotFoundError.
func Get(name string) (Scenario, error) {
	if name == "" || strings.ContainsAny(name, "/\\.") || !exists(name) {
		nf := &NotFoundError{Name: name}
		if len(name) <= 2*safe.CutRunes { // no edit distance to a 100 KB name
			nf.Similar = similar(name)
		}
		return Scenario{}, nf
	}
	return load(name)
}

// File is the name a scenario's manifest goes by in messages and
// recordings: "scenario:NAME".
func File(name string) string { return "scenario:" + name }

func exists(name string) bool {
	_, err := fs.Stat(data, path.Join("data", name+".yaml"))
	return err == nil
}

func load(name string) (Scenario, error) {
	s := Scenario{Name: name}
	var err error
	if s.Manifest, err = data.ReadFile(path.Join("data", name+".yaml")); err != nil {
		return s, fmt.Errorf("scenario %s: %w", name, err)
	}
	for _, f := range []struct {
		ext    string
		v      any
		strict bool // the engine's tests read .expect strictly, with more fields
	}{{".expect", &s.Expect, false}, {".lesson", &s.Lesson, true}} {
		b, err := data.ReadFile(path.Join("data", name+f.ext))
		if err != nil {
			return s, fmt.Errorf("scenario %s: %w", name, err)
		}
		unmarshal := yaml.Unmarshal
		if f.strict {
			unmarshal = yaml.UnmarshalStrict
		}
		if err := unmarshal(b, f.v); err != nil {
			return s, fmt.Errorf("scenario %s: %s%s: %w", name, name, f.ext, err)
		}
	}
	return s, nil
}

// similar are the names that contain name, or share a word with it.
func similar(name string) []string {
	var out []string
	words := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == ' ' })
	for _, n := range Names() {
		if name != "" && (strings.Contains(n, strings.ToLower(name)) || strings.Contains(strings.ToLower(name), n)) {
			out = append(out, n)
			continue
		}
		for _, w := range words {
			if len(w) >= 3 && strings.Contains(n, w) {
				out = append(out, n)
				break
			}
		}
	}
	if len(out) > 5 {
		out = out[:5]
	}
	return out
}

package diff

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/podstep/podstep/internal/steps"
)

// Result is a comparison of two recordings: what `podstep diff` prints,
// and its -o json object.
type Result struct {
	A Side `json:"a"`
	B Side `json:"b"`
	// Manifest says whether the two recordings are of the same pod spec.
	Manifest ManifestCheck `json:"manifest"`
	// Normalisations are the rules applied; each side's Substs say which of
	// its values they replaced.
	Normalisations []Normalisation `json:"normalisations"`
	Calls          []Entry         `json:"calls"`
	Stages         []StageRow      `json:"stages"`
	Counts         Counts          `json:"counts"`
}

// Side describes one recording.
type Side struct {
	Name     string    `json:"name"`
	Podstep  string    `json:"podstep"`
	Recorded time.Time `json:"recorded"`
	Runtime  string    `json:"runtime"`
	Pod      string    `json:"pod"`
	Calls    int       `json:"calls"`
	Substs   []Subst   `json:"substs"`
}

// ManifestCheck compares the recordings' pod specs.
type ManifestCheck struct {
	Same bool `json:"same"`
	// Why says what differs, or why it could not be checked.
	Why string `json:"why,omitempty"`
}

// Entry is one line of the aligned call order.
type Entry struct {
	Op        Op          `json:"op"`
	Method    string      `json:"method"`
	Container string      `json:"container,omitempty"`
	Stage     steps.Stage `json:"stage,omitempty"`
	// StepA and StepB name the step each side's call was in ("" for none);
	// CountA and CountB are how many identical calls in a row it stands for.
	StepA  string  `json:"step_a,omitempty"`
	StepB  string  `json:"step_b,omitempty"`
	CountA int     `json:"count_a"`
	CountB int     `json:"count_b"`
	CodeA  string  `json:"code_a,omitempty"`
	CodeB  string  `json:"code_b,omitempty"`
	MsA    float64 `json:"ms_a"`
	MsB    float64 `json:"ms_b"`
	// Fields are the request fields that differ (Op Differ only).
	Fields []FieldDiff `json:"fields,omitempty"`
}

// FieldDiff is one request field that differs; an absent side is "".
type FieldDiff struct {
	Path string `json:"path"`
	A    string `json:"a,omitempty"`
	B    string `json:"b,omitempty"`
}

// StageRow is one stage's time in both recordings.
type StageRow struct {
	Stage   steps.Stage `json:"stage"`
	AMs     float64     `json:"a_ms"`
	BMs     float64     `json:"b_ms"`
	DeltaMs float64     `json:"delta_ms"`
	ACRIMs  float64     `json:"a_cri_ms"`
	BCRIMs  float64     `json:"b_cri_ms"`
	ACalls  int         `json:"a_calls"`
	BCalls  int         `json:"b_calls"`
	// InA and InB say whether the stage ran at all.
	InA bool `json:"in_a"`
	InB bool `json:"in_b"`
}

// Counts counts the aligned entries by Op.
type Counts struct {
	Same   int `json:"same"`
	Differ int `json:"differ"`
	OnlyA  int `json:"only_a"`
	OnlyB  int `json:"only_b"`
}

// Differs reports whether anything differs after normalisation: an entry
// of one side only, or a pair with different fields or codes. Times and
// polling counts never do.
func (r *Result) Differs() bool {
	c := r.Counts
	return c.Differ+c.OnlyA+c.OnlyB > 0
}

// Compare compares two recordings.
func Compare(a, b *Recording) *Result {
	static := StaticPodName(a, b)
	fa, fb := prepare(a, static), prepare(b, static)
	res := &Result{A: side(a, fa), B: side(b, fb), Manifest: CheckManifests(a, b), Normalisations: Normalisations}
	for _, p := range alignCalls(fa.calls, fb.calls) {
		var e Entry
		switch {
		case p.a >= 0 && p.b >= 0:
			ca, cb := fa.calls[p.a], fb.calls[p.b]
			e = entry(Same, ca)
			e.StepB, e.CountB, e.CodeB, e.MsB = cb.StepName, cb.Count, cb.Code, cb.DurationMs
			e.Fields = compareFields(ca.Fields, cb.Fields, a.Partial, b.Partial)
			if len(e.Fields) > 0 || ca.Code != cb.Code {
				e.Op = Differ
			}
		case p.a >= 0:
			e = entry(OnlyA, fa.calls[p.a])
		default:
			cb := fb.calls[p.b]
			e = Entry{Op: OnlyB, Method: cb.Method, Container: cb.Container, Stage: cb.Stage,
				StepB: cb.StepName, CountB: cb.Count, CodeB: cb.Code, MsB: cb.DurationMs}
		}
		switch e.Op {
		case Same:
			res.Counts.Same++
		case Differ:
			res.Counts.Differ++
		case OnlyA:
			res.Counts.OnlyA++
		case OnlyB:
			res.Counts.OnlyB++
		}
		res.Calls = append(res.Calls, e)
	}
	res.Stages = stageRows(a.Stages, b.Stages)
	return res
}

func entry(op Op, c *Call) Entry {
	return Entry{Op: op, Method: c.Method, Container: c.Container, Stage: c.Stage,
		StepA: c.StepName, CountA: c.Count, CodeA: c.Code, MsA: c.DurationMs}
}

// prepared is a recording's calls attributed, normalised and folded.
type prepared struct {
	n     *normaliser
	calls []*Call
}

func prepare(r *Recording, staticName bool) prepared {
	n := newNormaliser(r.Calls)
	if staticName {
		n.podName = podNameOf(r.Calls)
		n.substs = append(n.substs, Subst{Placeholder: "<pod-name>", Value: n.podName})
	}
	var out []*Call
	for _, c0 := range r.Calls {
		c := *c0
		n.attribute(&c)
		c.Fields = n.fields(c.Method, Fields(c.Method, c.Request))
		if k := len(out); k > 0 && foldable(out[k-1], &c) {
			out[k-1].Count++
			out[k-1].DurationMs += c.DurationMs
			continue
		}
		c.Count = 1
		out = append(out, &c)
	}
	return prepared{n: n, calls: out}
}

// podNameOf is the pod's name in the first RunPodSandbox request.
func podNameOf(calls []*Call) string {
	for _, c := range calls {
		if c.Method == "RunPodSandbox" {
			var req struct {
				Config struct{ Metadata struct{ Name string } }
			}
			_ = json.Unmarshal(c.Request, &req)
			return req.Config.Metadata.Name
		}
	}
	return ""
}

// StaticPodName reports whether one recording's pod is the other's as a
// kubelet names a static pod: NAME-NODE (generatePodName,
// pkg/kubelet/config/common.go), where NODE is that recording's node when
// its header says (a trace's does not). The names are then normalised.
func StaticPodName(a, b *Recording) bool {
	na, nb := podNameOf(a.Calls), podNameOf(b.Calls)
	static := func(short, long string, r *Recording) bool {
		suffix, ok := strings.CutPrefix(long, short+"-")
		if !ok || short == "" || suffix == "" {
			return false
		}
		if n := r.Header.Node; n != nil && n.Object != nil && n.Object.Name != "" {
			return suffix == strings.ToLower(n.Object.Name)
		}
		return true
	}
	return static(na, nb, b) || static(nb, na, a)
}

// foldable says whether c repeats prev: the same method, container, step,
// code and normalised request.
func foldable(prev, c *Call) bool {
	if prev.Key() != c.Key() || prev.Step != c.Step || prev.Code != c.Code || len(prev.Fields) != len(c.Fields) {
		return false
	}
	for i := range c.Fields {
		if prev.Fields[i] != c.Fields[i] {
			return false
		}
	}
	return true
}

func keys(calls []*Call) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.alignKey()
	}
	return out
}

// alignKey is what the alignment matches calls on: the Key, and the
// attempt of the container the call is about (a CreateContainer's
// config.metadata.attempt, absent for 0; the normalised container_id
// <container:NAME/ATTEMPT> of the calls on a container). A kubelet that
// restarted a container made and started it again with the next attempt;
// a run that did not has only attempt 0's calls, which pair with the
// kubelet's first ones, not with whichever let more later calls line up.
func (c *Call) alignKey() string {
	for _, f := range c.Fields {
		switch {
		case f.Path == "config.metadata.attempt" && c.Method == "CreateContainer":
			return c.Key() + "\x00" + f.Value
		case f.Path == "container_id":
			if i := strings.LastIndexByte(f.Value, '/'); i >= 0 && strings.HasPrefix(f.Value, `"<container:`) {
				return c.Key() + "\x00" + strings.TrimSuffix(f.Value[i+1:], `>"`)
			}
		}
	}
	if c.Method == "CreateContainer" {
		return c.Key() + "\x000"
	}
	return c.Key()
}

// compareFields lists the paths whose values differ, in A's order, then
// B's paths that A does not have.
func compareFields(a, b []Field, partialA, partialB bool) []FieldDiff {
	bv := make(map[string]string, len(b))
	for _, f := range b {
		bv[f.Path] = f.Value
	}
	inA := make(map[string]bool, len(a))
	var out []FieldDiff
	for _, f := range a {
		inA[f.Path] = true
		v, ok := bv[f.Path]
		if !ok && partialB {
			continue
		}
		if !ok || v != f.Value {
			out = append(out, FieldDiff{Path: f.Path, A: f.Value, B: v})
		}
	}
	for _, f := range b {
		if !inA[f.Path] && !partialA {
			out = append(out, FieldDiff{Path: f.Path, B: f.Value})
		}
	}
	return out
}

func side(r *Recording, p prepared) Side {
	h := r.Header
	s := Side{Name: r.Name, Podstep: h.Podstep, Recorded: h.Recorded, Calls: len(r.Calls), Substs: p.n.substs}
	switch rt := h.Runtime; {
	case rt.Simulated:
		s.Runtime = "simulated"
	case rt.Name != "":
		s.Runtime = rt.Name + " " + rt.Version
	default:
		s.Runtime = rt.Endpoint
	}
	if pod := h.Manifest.Pod; pod != nil {
		s.Pod = pod.Namespace + "/" + pod.Name
	}
	if s.Substs == nil {
		s.Substs = []Subst{}
	}
	return s
}

// CheckManifests compares the pod specs in the two headers (names, UIDs
// and everything outside spec aside: a static pod's name and UID are the
// kubelet's own).
func CheckManifests(a, b *Recording) ManifestCheck {
	pa, pb := a.Header.Manifest.Pod, b.Header.Manifest.Pod
	const why = " holds no manifest (a kubelet's recording or trace holds the pod only as its calls show it): cannot check it is the same pod"
	switch {
	case !a.FromManifest && !b.FromManifest:
		return ManifestCheck{Why: "neither recording holds a manifest: cannot check they are of the same pod"}
	case !a.FromManifest:
		return ManifestCheck{Why: a.Name + why}
	case !b.FromManifest:
		return ManifestCheck{Why: b.Name + why}
	}
	ja, _ := json.Marshal(pa.Spec)
	jb, _ := json.Marshal(pb.Spec)
	if string(ja) == string(jb) {
		return ManifestCheck{Same: true}
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	var fa, fb []Field
	walkJSON("spec", va, &fa)
	walkJSON("spec", vb, &fb)
	d := compareFields(fa, fb, false, false)
	var paths []string
	for i, f := range d {
		if i == 3 {
			paths = append(paths, fmt.Sprintf("and %d more", len(d)-3))
			break
		}
		paths = append(paths, f.Path)
	}
	return ManifestCheck{Why: "the pod specs differ: " + strings.Join(paths, ", ")}
}

// stageRows pairs the stages in the order they ran (A's, then B's others).
func stageRows(a, b []StageTime) []StageRow {
	var out []StageRow
	idx := map[steps.Stage]int{}
	for _, s := range a {
		idx[s.Stage] = len(out)
		out = append(out, StageRow{Stage: s.Stage, AMs: s.Ms, ACRIMs: s.CRIMs, ACalls: s.Calls, InA: true})
	}
	for _, s := range b {
		i, ok := idx[s.Stage]
		if !ok {
			i = len(out)
			out = append(out, StageRow{Stage: s.Stage})
		}
		r := &out[i]
		r.BMs, r.BCRIMs, r.BCalls, r.InB = s.Ms, s.CRIMs, s.Calls, true
	}
	for i := range out {
		out[i].DeltaMs = round3(out[i].BMs - out[i].AMs)
	}
	return out
}

func round3(x float64) float64 {
	if x < 0 {
		return -float64(int64(-x*1000+0.5)) / 1000
	}
	return float64(int64(x*1000+0.5)) / 1000
}

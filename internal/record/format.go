package record

import (
	"encoding/json"
	"os"
	"runtime"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
)

// Format names the file format in every header.
const Format = "podstep-recording"

// Version is the format version this podstep writes. Readers accept it and
// every older one; a newer one is refused with a message to upgrade. Within
// one version, lines may gain fields and new line types may appear, which
// older readers ignore; anything an older reader would misread needs a new
// version.
//
// Version 2 (issue 34): a "step" line has the whole pod ("pod") only on
// the first step line with a pod and where the printer resyncs; the others
// have what the step changed ("pod_delta", report.PodDelta). Version 1
// lines have the whole pod on every step line. The Reader folds both:
// Event.Step.Pod is always the whole pod after the step.
const Version = 2

// Line types, the "type" field of each line after the header. "start",
// "step" and "summary" are the objects `podstep run --auto -o json` prints.
const (
	TypeHeader      = "header"
	TypeStart       = "start"
	TypePlan        = "plan"
	TypeStepStarted = "step-started"
	TypeCallSent    = "call-sent"
	TypeCall        = "call"
	TypeStep        = "step"
	TypeLog         = "log"
	TypeSummary     = "summary"
)

// Header is line 1: what was recorded, where, when and how.
type Header struct {
	Type    string `json:"type"`    // "header"
	Format  string `json:"format"`  // Format
	Version int    `json:"version"` // Version
	// Podstep is the version of the podstep that recorded.
	Podstep string `json:"podstep"`
	// Recorded is when the recording began.
	Recorded time.Time `json:"recorded"`
	// Host is the recording machine's host name; OS is GOOS/GOARCH.
	Host string `json:"host"`
	OS   string `json:"os"`
	// Interactive is true when the run was the TUI, false for --auto.
	Interactive bool `json:"interactive"`
	// Output is the run's -o (text or json).
	Output  string  `json:"output"`
	Runtime Runtime `json:"runtime"`
	// Flags are the run's flags (global ones included) with their values,
	// defaults too: what shaped the run.
	Flags map[string]string `json:"flags"`
	// Manifest is the pod's bundle, without Secret values.
	Manifest Manifest `json:"manifest"`
	// Node is the node the pod was admitted to.
	Node *Node `json:"node,omitempty"`
}

// Runtime is the runtime the run talked to.
type Runtime struct {
	Endpoint      string `json:"endpoint"`
	ImageEndpoint string `json:"image_endpoint,omitempty"`
	Simulated     bool   `json:"simulated"`
	// Why says how the endpoint was chosen.
	Why string `json:"why"`
	// Name, Version and APIVersion are what the runtime's Version call
	// answered when the recording began (empty if it did not answer).
	Name       string `json:"name,omitempty"`
	Version    string `json:"version,omitempty"`
	APIVersion string `json:"api_version,omitempty"`
}

// Manifest is the bundle the run loaded. Secrets keep their names, type,
// labels and keys; every value is empty.
type Manifest struct {
	File       string              `json:"file"`
	Pod        *corev1.Pod         `json:"pod"`
	Secrets    []*corev1.Secret    `json:"secrets,omitempty"`
	ConfigMaps []*corev1.ConfigMap `json:"configmaps,omitempty"`
	Node       *corev1.Node        `json:"node,omitempty"`
}

// Node is the node the pod was admitted to.
type Node struct {
	Source               string        `json:"source"`
	Object               *corev1.Node  `json:"object"`
	Existing             []*corev1.Pod `json:"existing,omitempty"`
	AllowedUnsafeSysctls []string      `json:"allowed_unsafe_sysctls,omitempty"`
}

// Start is the "start" line: the first line `-o json` prints.
type Start struct {
	Type    string         `json:"type"`
	Pod     string         `json:"pod"`
	Runtime render.Runtime `json:"runtime"`
}

// Plan is a "plan" line: the plan from step From on is Steps. The first
// plan line has From 1 and lists every step; later ones, written when the
// plan changed (a restart inserted steps, teardown appended its own, steps
// were skipped or retried), replace the steps from From to the end.
type Plan struct {
	Type  string                `json:"type"`
	From  int                   `json:"from"`
	Steps []report.PlanStepJSON `json:"steps"`
}

// StepStarted is a "step-started" line: the step began, and these are the
// exact requests it is about to send (redacted).
type StepStarted struct {
	Type     string               `json:"type"`
	ID       int                  `json:"id"`
	Name     string               `json:"name"`
	Started  time.Time            `json:"started"`
	Requests []report.RequestJSON `json:"requests,omitempty"`
}

// CallSent is a "call-sent" line: a CRI request went out (its answer comes
// in a "call" line).
type CallSent struct {
	Type   string    `json:"type"`
	Step   int       `json:"step"`
	Method string    `json:"method"`
	Time   time.Time `json:"time"`
}

// Call is a "call" line: a CRI call returned. The step's "step" line lists
// it again; this line is there so a recording cut inside a step still has
// the calls made.
type Call struct {
	Type string `json:"type"`
	Step int    `json:"step"`
	report.CallJSON
}

// Log is a "log" line: one line a container wrote to its CRI log, read at
// the end of a step, redacted.
type Log struct {
	Type      string `json:"type"`
	Step      int    `json:"step"` // the step after which it was read
	Container string `json:"container"`
	Attempt   int    `json:"attempt"` // the container's restart count: <attempt>.log
	// Time is the runtime's timestamp of the line (RFC 3339, as logged).
	Time   string `json:"time"`
	Stream string `json:"stream"` // stdout or stderr
	// Partial is true for a line the runtime split (tag P).
	Partial bool   `json:"partial,omitempty"`
	Line    string `json:"line"`
}

// Event is one line after the header, decoded by its type. Exactly one of
// the pointers is set, except for a type this reader does not know (a
// newer podstep's addition), where only Type and Raw are.
type Event struct {
	Type string
	// Line is the line's number in the file (the header is line 1) and
	// Offset the byte offset of its start, in the uncompressed stream.
	Line   int
	Offset int64
	// Raw is the line as recorded, without its newline.
	Raw json.RawMessage

	Start       *Start
	Plan        *Plan
	StepStarted *StepStarted
	CallSent    *CallSent
	Call        *Call
	// Step is a step line; its Pod is always the whole pod after the
	// step (a version 2 line's pod_delta folded by the Reader).
	Step    *report.StepJSON
	Log     *Log
	Summary *report.Summary
}

// NewHeader is the one way a recording's header begins, for every
// recorder (run, proxy): podstep's version, this host and OS, how the run
// was driven, the runtime as it answers Version (on a connection of its
// own: RuntimeVersion) and every flag of cmd but --help with its value.
// The caller adds the manifest and node.
func NewHeader(podstep string, interactive bool, output string, rt Runtime, flags *pflag.FlagSet) Header {
	host, _ := os.Hostname()
	h := Header{Podstep: podstep, Host: host, OS: runtime.GOOS + "/" + runtime.GOARCH,
		Interactive: interactive, Output: output, Runtime: rt, Flags: map[string]string{}}
	flags.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" {
			h.Flags[f.Name] = f.Value.String()
		}
	})
	return h
}

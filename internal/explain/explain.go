// Package explain is podstep's table of known pod-start failures: for each,
// what failed, the likely causes in order, what the kubelet does next, how to
// confirm it on the node and the fix. Every frontend shows the same entry
// under a failing step (text, JSON "explanation", the TUI, the live page);
// `podstep explain ID` prints one and docs/explain.md is generated from the
// table.
//
// An entry is matched on the failure's kubelet reason and on the runtime's
// or the kubelet's own words, as containerd 1.6 and 2.x write them. Every
// entry is reproduced for real: its Reproduced field names the case of
// test/integration/explain_test.go that makes the failure on both runtimes,
// and its Seen texts are what those runtimes answered (the unit tests match
// them).
package explain

import (
	"strings"
)

// Failure is what a failed step found: the input of Find.
type Failure struct {
	// Reason is the kubelet's reason (ErrImagePull, RunContainerError,
	// OOMKilled, CreateContainerConfigError, Error, ...).
	Reason string
	// Message is the runtime's or the kubelet's text.
	Message string
	// Log is the last lines of the container's log, for a container that
	// exited (its own words, e.g. runc's "exec format error"); nil otherwise.
	Log []string
}

// Entry is one known failure.
type Entry struct {
	// ID is the entry's stable name (`podstep explain ID`, JSON "id").
	ID string
	// Title says in one line what failed.
	Title string
	// Reasons are the kubelet reasons the entry applies to.
	Reasons []string
	// Pattern, when set, must match the message or a log line.
	Pattern *Regexp
	// Causes are the likely causes, most likely first.
	Causes []string
	// Next is what the kubelet does next.
	Next string
	// Confirm are commands to run on the node (or with kubectl) that
	// confirm the cause; {IMAGE}, {CONTAINER}, {POD}, {NAMESPACE} and
	// {CONTAINER_ID} are filled in from the failing pod.
	Confirm []string
	// Fix is what to change.
	Fix string
	// Runtimes says where the entry's texts come from.
	Runtimes string
	// Reproduced names the case of test/integration/explain_test.go that
	// makes the failure for real.
	Reproduced string
	// Seen are texts the runtimes (or the kubelet) answered in that test,
	// one per runtime where they differ: the unit tests match each.
	Seen []string
}

// Explanation is an entry as shown for one failure, its commands filled in
// with the pod's names (JSON "explanation").
type Explanation struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Causes  []string `json:"causes"`
	Next    string   `json:"kubelet_next"`
	Confirm []string `json:"confirm"`
	Fix     string   `json:"fix"`
}

// Values fill in an entry's commands.
type Values struct {
	Image, Container, Pod, Namespace, ContainerID string
}

// Find returns the first entry matching f, nil when none does.
func Find(f Failure) *Entry {
	for i := range table {
		if table[i].matches(f) {
			return &table[i]
		}
	}
	return nil
}

// Get returns the entry id, nil when there is none.
func Get(id string) *Entry {
	for i := range table {
		if table[i].ID == id {
			return &table[i]
		}
	}
	return nil
}

// All returns every entry, in the table's order.
func All() []Entry { return append([]Entry(nil), table...) }

// IDs returns every entry's ID, in the table's order.
func IDs() []string {
	out := make([]string, len(table))
	for i, e := range table {
		out[i] = e.ID
	}
	return out
}

func (e *Entry) matches(f Failure) bool {
	found := false
	for _, r := range e.Reasons {
		if r == f.Reason {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	if e.Pattern == nil {
		return true
	}
	if e.Pattern.MatchString(f.Message) {
		return true
	}
	for _, l := range f.Log {
		if e.Pattern.MatchString(l) {
			return true
		}
	}
	return false
}

// Explain returns the entry as shown for a failure of the pod v.
func (e *Entry) Explain(v Values) *Explanation {
	r := strings.NewReplacer("{IMAGE}", or(v.Image, "IMAGE"), "{CONTAINER}", or(v.Container, "CONTAINER"),
		"{POD}", or(v.Pod, "POD"), "{NAMESPACE}", or(v.Namespace, "default"), "{CONTAINER_ID}", or(v.ContainerID, "CONTAINER_ID"))
	out := &Explanation{ID: e.ID, Title: e.Title, Causes: e.Causes, Next: e.Next, Fix: e.Fix}
	for _, c := range e.Confirm {
		out.Confirm = append(out.Confirm, r.Replace(c))
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

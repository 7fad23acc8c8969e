package scenario

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Outcome is the expectation in a few words: "CrashLoopBackOff at
// containers/backoff/app" or "runs (Running)".
func (e Expect) Outcome() string {
	if e.Reason == "" {
		return "runs (" + e.Display + ")"
	}
	return e.Reason + " at " + e.Stage + "/" + e.Step
}

// RunCommand is the command line that runs s, with its lesson's flags.
func (s Scenario) RunCommand(extra ...string) string {
	args := append([]string{"podstep", "run"}, extra...)
	args = append(args, "--scenario", s.Name)
	return strings.Join(append(args, s.Lesson.Flags...), " ")
}

// ListWidth is the width the list's text fits (a terminal, a projector's
// 80 columns): each story is cut to it.
const ListWidth = 80

// WriteList prints the catalogue: a table (text) or a JSON array. The
// table fits ListWidth columns and leaves out each scenario's outcome (the
// answer a quiz asks for); wide adds it, uncut.
func WriteList(w io.Writer, all []Scenario, format string, wide bool) error {
	if format == "json" {
		type item struct {
			Name    string `json:"name"`
			Story   string `json:"story"`
			Outcome Expect `json:"expect"`
			Run     string `json:"run"`
		}
		items := make([]item, 0, len(all))
		for _, s := range all {
			items = append(items, item{s.Name, s.Lesson.Story, s.Expect, s.RunCommand()})
		}
		return writeJSON(w, items)
	}
	if wide {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tOUTCOME\tSTORY")
		for _, s := range all {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Expect.Outcome(), s.Lesson.Story)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else {
		nameW := len("NAME")
		for _, s := range all {
			nameW = max(nameW, len(s.Name))
		}
		storyW := max(20, ListWidth-nameW-2)
		fmt.Fprintf(w, "%-*s  %s\n", nameW, "NAME", "STORY")
		for _, s := range all {
			fmt.Fprintf(w, "%-*s  %s\n", nameW, s.Name, cut(s.Lesson.Story, storyW))
		}
	}
	_, err := fmt.Fprintf(w, "\n%d scenarios (--wide: what each ends with).\npodstep scenarios show NAME: the manifest and what to watch for;\npodstep run --scenario NAME runs one (add --predict to guess each step first).\n", len(all))
	return err
}

// cut shortens s to at most n runes, at a word, with "…".
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	t := string(r[:n-1])
	if i := strings.LastIndexByte(t, ' '); i > n/2 {
		t = t[:i]
	}
	return strings.TrimRight(t, " ,;:.") + "…"
}

// WriteShow prints one scenario: its lesson, how to run it and its
// manifest (text), all of it as one JSON object, or its manifest alone
// (yaml).
func WriteShow(w io.Writer, s Scenario, format string) error {
	if format == "yaml" {
		// The manifest alone, to save or pipe (podstep run -f -).
		_, err := w.Write(s.Manifest)
		return err
	}
	if format == "json" {
		return writeJSON(w, struct {
			Scenario
			Manifest string `json:"manifest"`
			Run      string `json:"run"`
		}{s, string(s.Manifest), s.RunCommand()})
	}
	l, e := s.Lesson, s.Expect
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n\n", s.Name, l.Story)
	if e.Reason == "" {
		fmt.Fprintf(&b, "Expected: the pod runs: STATUS %s, phase %s, podstep exits %d\n", e.Display, e.Phase, e.ExitCode)
	} else {
		fmt.Fprintf(&b, "Expected: fails at stage %s, step %s: %s; STATUS %s, phase %s, podstep exits %d\n", e.Stage, e.Step, e.Reason, e.Display, e.Phase, e.ExitCode)
	}
	fmt.Fprintf(&b, "\nWhat goes wrong:\n  %s\n", l.Wrong)
	fmt.Fprintf(&b, "\nDecided by (kubelet v1.37):\n  %s\n", l.Kubelet)
	fmt.Fprintf(&b, "\nWatch for:\n")
	for _, x := range l.Watch {
		fmt.Fprintf(&b, "  - %s\n", x)
	}
	fmt.Fprintf(&b, "\nkubectl describe pod would show:\n  STATUS: %s\n  Events:\n", l.Describe.Status)
	for _, ev := range l.Describe.Events {
		fmt.Fprintf(&b, "    %-8s %-24s %s\n", ev.Type, ev.Reason, ev.Message)
	}
	fmt.Fprintf(&b, "\nFix:\n  %s\n", l.Fix)
	fmt.Fprintf(&b, "\nRun it:\n  %s\n  %s\n", s.RunCommand(), s.RunCommand("--auto", "--predict"))
	fmt.Fprintf(&b, "\nManifest (%s):\n%s", File(s.Name), s.Manifest)
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

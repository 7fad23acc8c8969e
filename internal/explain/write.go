package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// entryJSON is an entry in `podstep explain -o json`.
type entryJSON struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Reasons    []string `json:"reasons"`
	Pattern    string   `json:"pattern,omitempty"`
	Causes     []string `json:"causes"`
	Next       string   `json:"kubelet_next"`
	Confirm    []string `json:"confirm"`
	Fix        string   `json:"fix"`
	Runtimes   string   `json:"runtimes"`
	Reproduced string   `json:"reproduced_by"`
	Seen       []string `json:"seen"`
}

func (e *Entry) json() entryJSON {
	j := entryJSON{ID: e.ID, Title: e.Title, Reasons: e.Reasons, Causes: e.Causes, Next: e.Next, Confirm: e.Confirm,
		Fix: e.Fix, Runtimes: e.Runtimes, Reproduced: reproducedBy(e), Seen: e.Seen}
	if e.Pattern != nil {
		j.Pattern = e.Pattern.String()
	}
	return j
}

// TestFile is the test that makes every entry's failure for real.
const TestFile = "test/integration/explain_test.go"

func reproducedBy(e *Entry) string {
	return "TestExplainReal/cases/" + e.Reproduced + " (" + TestFile + ")"
}

// IDList is every entry's ID, comma-separated, for an error message.
func IDList() string { return strings.Join(IDs(), ", ") }

// WriteList writes the table, one line per entry (text), or every entry
// (json: an array).
func WriteList(w io.Writer, output string) error {
	if output == "json" {
		all := make([]entryJSON, len(table))
		for i := range table {
			all[i] = table[i].json()
		}
		return writeJSON(w, all)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tREASON\tWHAT FAILED")
	for _, e := range table {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.ID, strings.Join(e.Reasons, ","), e.Title)
	}
	return tw.Flush()
}

// WriteEntry writes one entry whole.
func WriteEntry(w io.Writer, e *Entry, output string) error {
	if output == "json" {
		return writeJSON(w, e.json())
	}
	fmt.Fprintf(w, "%s: %s\n", e.ID, e.Title)
	fmt.Fprintf(w, "  kubelet reason: %s\n", strings.Join(e.Reasons, ", "))
	if e.Pattern != nil {
		fmt.Fprintf(w, "  matched on:     %s\n", e.Pattern)
	}
	fmt.Fprintln(w, "  likely causes:")
	for i, c := range e.Causes {
		fmt.Fprintf(w, "    %d. %s\n", i+1, c)
	}
	fmt.Fprintf(w, "  the kubelet next: %s\n", e.Next)
	fmt.Fprintln(w, "  confirm (on the node, or with kubectl):")
	for _, c := range e.Confirm {
		fmt.Fprintf(w, "    %s\n", c)
	}
	fmt.Fprintf(w, "  fix: %s\n", e.Fix)
	fmt.Fprintf(w, "  texts from: %s\n", e.Runtimes)
	fmt.Fprintf(w, "  made for real by: %s\n", reproducedBy(e))
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Markdown writes docs/explain.md: the whole table.
func Markdown(w io.Writer) error {
	fmt.Fprint(w, `# Known failures: podstep explain

<!-- Generated from internal/explain/table.go by `+"`go test ./internal/explain -run TestDoc -update`"+`: do not edit. -->

When a step fails, podstep matches the failure (the kubelet's reason and the runtime's or the kubelet's
words, and for a container that exited its last log lines) with this table and shows the entry under the
error: in run, replay, proxy and fleet text output (`+"`why:`"+`, the whole entry the first time), in JSON as the
step's and the summary's `+"`explanation`"+` (`+"`id`, `title`, `causes`, `kubelet_next`, `confirm`, `fix`"+`), and in
`+"`podstep explain ID`"+`. Commands name the failing pod, container, image and container ID.

Every entry is made for real on containerd 1.6 and 2.4 by `+"`"+TestFile+"`"+` (the case of the same name);
the texts below are what those runtimes answered there, and the unit tests match each. The sandbox and
network failures are made on a sick node: a private copy of the harness's containerd (its binary and config,
own dirs, `+"`test/integration/sick_test.go`"+`) with no CNI config, a plugin that fails or hangs, or a /30
range whose one address a leaked host-local file holds, or all its state on a small tmpfs (a full disk); the
platform and x509 pulls are from registries the test runs. The harness itself is untouched.

| ID | kubelet reason | what failed |
| --- | --- | --- |
`)
	for _, e := range table {
		fmt.Fprintf(w, "| [`%s`](#%s) | %s | %s |\n", e.ID, e.ID, strings.Join(e.Reasons, ", "), e.Title)
	}
	for _, e := range table {
		fmt.Fprintf(w, "\n## %s\n\n%s.\n\n", e.ID, upper(e.Title))
		fmt.Fprintf(w, "- **Kubelet reason:** %s", strings.Join(e.Reasons, ", "))
		if e.Pattern != nil {
			fmt.Fprintf(w, "; matched on `%s`", e.Pattern)
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "- **Likely causes:**")
		for i, c := range e.Causes {
			fmt.Fprintf(w, "  %d. %s\n", i+1, c)
		}
		fmt.Fprintf(w, "- **The kubelet next:** %s\n", e.Next)
		fmt.Fprintln(w, "- **Confirm:**")
		for _, c := range e.Confirm {
			fmt.Fprintf(w, "  - `%s`\n", strings.ReplaceAll(c, "`", "'"))
		}
		fmt.Fprintf(w, "- **Fix:** %s\n", e.Fix)
		fmt.Fprintf(w, "- **Texts from:** %s; made by `TestExplainReal/cases/%s`.\n", e.Runtimes, e.Reproduced)
		fmt.Fprintln(w, "- **Seen:**")
		for _, s := range e.Seen {
			fmt.Fprintf(w, "  - `%s`\n", s)
		}
	}
	return nil
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

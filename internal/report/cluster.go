package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/fatih/color"

	"github.com/podstep/podstep/internal/cluster"
)

// WriteClusterText prints the cluster's view as a section after the run's
// summary line.
func WriteClusterText(w io.Writer, v *cluster.PodView) {
	var sb strings.Builder
	writeCluster(&sb, v)
	_, _ = io.WriteString(w, sb.String())
}

func writeCluster(w *strings.Builder, v *cluster.PodView) {
	head := color.New(color.Bold)
	w.WriteString(head.Sprintf("cluster's view of pod/%s", v.Pod))
	fmt.Fprintf(w, " (API server %s", v.Server)
	if v.ResourceVersion != "" {
		fmt.Fprintf(w, ", resourceVersion %s", v.ResourceVersion)
	}
	fmt.Fprintln(w, ")")
	for _, n := range v.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	if v.Error != "" {
		fmt.Fprintf(w, "  could not read it: %s\n", v.Error)
		return
	}
	st := v.Phase
	if v.Reason != "" {
		st += " (" + v.Reason + ")"
	}
	fmt.Fprintf(w, "  phase %s  node %s  uid %s\n", st, orNone(v.Node), v.UID)
	if v.Message != "" {
		fmt.Fprintf(w, "  message: %s\n", v.Message)
	}
	for _, c := range v.Containers {
		fmt.Fprintf(w, "  %s\n", c.Line())
	}
	if len(v.Events) == 0 {
		fmt.Fprintln(w, "  events: none")
		return
	}
	fmt.Fprintf(w, "  %-8s %-22s %-28s %s\n", "TYPE", "REASON", "FROM", "MESSAGE")
	for _, e := range v.Events {
		msg := e.Message
		if e.Count > 1 {
			msg += fmt.Sprintf(" (x%d)", e.Count)
		}
		fmt.Fprintf(w, "  %-8s %-22s %-28s %s\n", e.Type, e.Reason, e.Source, strings.TrimSpace(msg))
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
)

// ExitDiffers is podstep diff's exit code when the recordings differ after
// normalisation (0: the same; 2: bad input).
const ExitDiffers = 1

type diffOptions struct {
	output        string
	differentPods bool
}

func newDiffCmd() *cobra.Command {
	var o diffOptions
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two recordings of the same pod: call order, request fields, time per stage",
		Long: `Compare two recordings (podstep run --record, podstep proxy --record) of the same manifest.

The CRI calls are aligned on (method, container) like a unified diff (polling folded), the
request fields that differ are listed under each aligned pair after the values that differ in
any two runs are normalised (IDs, the pod UID, the root and log directories, timestamps, the
config hash; the list is printed), and the time per stage is shown side by side.

Exit codes: 0 the same after normalisation, 1 they differ, 2 bad input (not a recording, a
damaged one, or two recordings of different pod specs without --different-pods).`,
		Example: `  podstep run -f pod.yaml --auto --record a.rec.gz
  podstep proxy --record b.rec.gz ...      # a real kubelet creating the same pod
  podstep diff a.rec.gz b.rec.gz
  podstep diff a.rec.gz b.rec.gz -o json | jq '.calls[] | select(.op != "=")'`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDiff(cmd, args[0], args[1], o)
		},
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", report.Text, "output format: text or json")
	cmd.Flags().BoolVar(&o.differentPods, "different-pods", false, "compare recordings of different pod specs (a warning instead of exit 2)")
	return cmd
}

func runDiff(cmd *cobra.Command, pathA, pathB string, o diffOptions) error {
	if err := session.CheckOutput(o.output, report.Text, report.JSON); err != nil {
		return err
	}
	a, err := diff.Load(pathA)
	if err != nil {
		return session.Usagef("diff: %v", err)
	}
	b, err := diff.Load(pathB)
	if err != nil {
		return session.Usagef("diff: %v", err)
	}
	res := diff.Compare(a, b)
	if !res.Manifest.Same {
		if !o.differentPods && a.FromManifest && b.FromManifest {
			return session.Usagef("diff %s %s: %s (they are not recordings of the same manifest; --different-pods compares them anyway)", pathA, pathB, res.Manifest.Why)
		}
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", res.Manifest.Why)
	}
	out := cmd.OutOrStdout()
	if o.output == report.JSON {
		err = res.WriteJSON(out)
	} else {
		err = res.WriteText(out)
	}
	if err != nil {
		return err
	}
	if res.Differs() {
		return session.Silent(ExitDiffers)
	}
	return nil
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/diff"
	"github.com/podstep/podstep/internal/report"
)

func newDiffCmd() *cobra.Command {
	o := diff.Command{}
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
			o.A, o.B, o.Stdout, o.Stderr = args[0], args[1], cmd.OutOrStdout(), cmd.ErrOrStderr()
			return o.Execute()
		},
	}
	cmd.Flags().StringVarP(&o.Output, "output", "o", report.Text, "output format: text or json")
	cmd.Flags().BoolVar(&o.DifferentPods, "different-pods", false, "compare recordings of different pod specs (a warning instead of exit 2)")
	return cmd
}

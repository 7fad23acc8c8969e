package main

import (
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/explain"
	"github.com/podstep/podstep/internal/session"
)

func newExplainCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "explain [ID]",
		Short: "Explain a known pod-start failure: causes, what the kubelet does next, how to confirm, the fix",
		Long: `explain prints podstep's table of known pod-start failures (image pulls refused or
not found, a command missing or for another architecture, OOMKilled, runAsNonRoot, a
missing ConfigMap or Secret, crash loops...), or one entry of it. run, replay, proxy
and fleet show the entry a failed step matches under its error, with its ID; JSON
output carries it as "explanation". Every entry is made for real on containerd 1.6
and 2.4 by podstep's integration tests (docs/explain.md).`,
		Example: `  podstep explain                      # every entry, one line each
  podstep explain image-unauthorized   # one entry
  podstep explain oom-killed -o json`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: completeExplain,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := session.CheckOutput(output, "text", "json"); err != nil {
				return err
			}
			if len(args) == 0 {
				return explain.WriteList(cmd.OutOrStdout(), output)
			}
			e := explain.Get(args[0])
			if e == nil {
				return session.Usagef("explain %q: no such entry; podstep explain lists them (%s)", args[0], explain.IDList())
			}
			return explain.WriteEntry(cmd.OutOrStdout(), e, output)
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text or json")
	return cmd
}

// completeExplain completes an entry's ID.
func completeExplain(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return explain.IDs(), cobra.ShellCompDirectiveNoFileComp
}

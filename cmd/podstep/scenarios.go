package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/scenario"
	"github.com/podstep/podstep/internal/session"
)

func newScenariosCmd() *cobra.Command {
	var (
		output string
		wide   bool
	)
	cmd := &cobra.Command{
		Use:   "scenarios [show NAME]",
		Short: "List the built-in scenarios (classic pod failures with a lesson each), or show one",
		Long: `scenarios lists the built-in scenarios, each a pod that goes wrong the way pods do
(admission refusals, image pulls, crash loops, hooks, init containers...), with the
kubelet function that decides it, what kubectl describe pod would show, and the fix.
They are part of podstep: podstep run --scenario NAME runs one, plan --scenario NAME
plans it. docs/workshop.md shows how to teach with them.`,
		Example: `  podstep scenarios                      # the list, one line each (80 columns)
  podstep scenarios --wide               # with what each ends with (the quiz's answer)
  podstep scenarios show crashloop       # the lesson, what to watch for, the manifest
  podstep scenarios show crashloop -o yaml > pod.yaml   # the manifest alone
  podstep run --scenario crashloop --backoff-scale 0.1
  podstep run --auto --predict --scenario out-of-cpu`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := session.CheckOutput(output, "text", "json"); err != nil {
				return err
			}
			all, err := scenario.All()
			if err != nil {
				return err
			}
			return scenario.WriteList(cmd.OutOrStdout(), all, output, wide)
		},
	}
	show := &cobra.Command{
		Use:               "show NAME",
		Short:             "Show a scenario: what goes wrong, the kubelet function, kubectl describe, the fix, the manifest",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeScenario,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := session.CheckOutput(output, "text", "json", "yaml"); err != nil {
				return err
			}
			s, err := scenario.Get(args[0])
			if err != nil {
				return session.Usagef("%v", err)
			}
			return scenario.WriteShow(cmd.OutOrStdout(), s, output)
		},
	}
	cmd.PersistentFlags().StringVarP(&output, "output", "o", "text", "text or json; show: yaml too (the manifest alone)")
	cmd.Flags().BoolVar(&wide, "wide", false, "add each scenario's outcome (the answer predict mode asks for)")
	cmd.AddCommand(show)
	return cmd
}

// completeScenario completes a scenario's name (show NAME, --scenario).
func completeScenario(_ *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, n := range scenario.Names() {
		if len(args) == 0 && strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// scenarioFlag completes --scenario on a command that has it.
func scenarioFlag(cmd *cobra.Command) *cobra.Command {
	_ = cmd.RegisterFlagCompletionFunc("scenario", completeScenario)
	return cmd
}

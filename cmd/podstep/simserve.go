package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/sim"
)

// newSimServeCmd is `podstep sim-serve DIR` (hidden): the simulated runtime
// in a process of its own (sim.Serve; bench starts it with sim.StartProcess).
func newSimServeCmd() *cobra.Command {
	var untilEOF bool
	cmd := &cobra.Command{
		Use:    "sim-serve DIR",
		Short:  "Serve the simulated CRI runtime on DIR/sim.sock until interrupted (for benchmarks)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := sim.Serve(args[0], cmd.InOrStdin(), cmd.OutOrStdout(), untilEOF); err != nil {
				return session.RuntimeErr(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&untilEOF, "until-stdin-closes", false, "also stop when standard input closes (the parent went away)")
	return cmd
}

// simServeBinary is the podstep executable bench's simulated runtime runs
// (the tests' is the test binary, so they name the podstep they built).
var simServeBinary = os.Executable

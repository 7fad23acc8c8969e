package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/sim"
)

// newSimServeCmd is `podstep sim-serve DIR` (hidden): the simulated runtime
// in a process of its own, on DIR/sim.sock, until SIGINT or SIGTERM. It is
// for measuring podstep's own CPU time (hack/bench-overhead.sh), which
// with --sim would include the runtime's.
func newSimServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sim-serve DIR",
		Short:  "Serve the simulated CRI runtime on DIR/sim.sock until interrupted (for benchmarks)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
			defer signal.Stop(sigs)
			srv, err := sim.Start(args[0])
			if err != nil {
				return runtimeErr(fmt.Errorf("start simulated runtime: %w", err))
			}
			defer srv.Stop()
			fmt.Fprintln(cmd.OutOrStdout(), srv.Endpoint())
			<-sigs
			return nil
		},
	}
}

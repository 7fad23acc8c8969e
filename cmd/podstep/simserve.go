package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/imageconfig"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/sim"
)

// newSimServeCmd is `podstep sim-serve DIR` (hidden): the simulated runtime
// in a process of its own (sim.Serve; bench starts it with sim.StartProcess).
func newSimServeCmd() *cobra.Command {
	var untilEOF bool
	var dirs []string
	var image imageconfig.Flags
	cmd := &cobra.Command{
		Use:   "sim-serve DIR",
		Short: "Serve the simulated CRI runtime on DIR/sim.sock (mode 0600) until interrupted (for benchmarks)",
		Long: `podstep sim-serve serves the simulated CRI runtime on DIR/sim.sock, of mode 0600
whatever the umask: only its user may call it. DIR must be private (yours or root's,
writable by no one else). Requests may name log directories only inside DIR and the
--allow-dir directories (InvalidArgument otherwise). It listens on no TCP port.`,
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// bench passes its image config flags (the mode resolved): the
			// simulated pulls read configs as run's do. Without
			// --image-config it reads none.
			var fetcher *imageconfig.Fetcher
			if cmd.Flags().Changed("image-config") {
				var err error
				if fetcher, err = image.Fetcher(true); err != nil {
					return session.Usagef("%v", err)
				}
			}
			if err := sim.Serve(args[0], sim.Options{Dirs: dirs, ImageConfig: fetcher}, cmd.InOrStdin(), cmd.OutOrStdout(), untilEOF); err != nil {
				return session.RuntimeErr(err)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dirs, "allow-dir", nil, "a directory, besides DIR, in which requests may name log directories (the run's --root-dir and --log-dir); repeatable")
	image.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&untilEOF, "until-stdin-closes", false, "also stop when standard input closes (the parent went away)")
	return cmd
}

// simServeBinary is the podstep executable bench's simulated runtime runs
// (the tests' is the test binary, so they name the podstep they built).
var simServeBinary = os.Executable

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cleanup"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/session"
)

func newCleanupCmd(g *globalOptions) *cobra.Command {
	var grace int64
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove every pod sandbox podstep created on the runtime, and its pod and log dirs",
		Long: `cleanup finds the sandboxes labelled podstep.dev/managed=true on the chosen runtime,
stops and removes their containers, stops and removes the sandboxes, and removes the pod
data and log directories recorded on them. Pods of a kubelet sharing the runtime are
never touched.

A directory is removed only once the runtime removed the sandbox (its containers may
use it until then), and only when podstep recorded making it: it holds podstep's
` + mark.File + ` file naming the pod, and lies where podstep puts it. Anything left
is listed, and the exit code is 4.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.ep.Sim {
				return session.Usagef("cleanup: the simulated runtime lives only while podstep runs; there is nothing to clean")
			}
			c, err := session.Connect(cmd.Context(), g.ep)
			if err != nil {
				return err
			}
			defer c.Stop()
			if c.Runtime.Simulated {
				return session.RuntimeErr(fmt.Errorf("cleanup: no runtime answered (%s); name one with -r", c.Runtime.Why))
			}
			done, err := cleanup.Run(cmd.Context(), c.Client, grace)
			if err != nil {
				return session.RuntimeErr(err)
			}
			left := cleanup.Write(cmd.OutOrStdout(), c.Runtime.Endpoint, done)
			if left > 0 {
				return &session.Error{Code: ExitLeftBehind, Err: fmt.Errorf("cleanup: %d of %d pods not fully removed", left, len(done))}
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&grace, "grace-period", 2, "seconds StopContainer waits before SIGKILL")
	return cmd
}

package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/shadow"
)

// newShadowHelperCmd is `podstep shadow-helper` (hidden): a fleet runner's
// shadow runtime, started and removed in the host's mount namespace
// (shadow.StartInHost runs it there; shadow.Helper).
func newShadowHelperCmd() *cobra.Command {
	return &cobra.Command{
		Use:    shadow.HelperCommand,
		Short:  "Start a shadow runtime as asked on stdin, remove it on the word stop or the end of stdin (a fleet runner's)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Its runner says when the shadow goes (or its stdin closes):
			// a signal to the runner's group must not cut the removal short.
			signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
			if err := shadow.Helper(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				return session.RuntimeErr(err)
			}
			return nil
		},
	}
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/manifest"
)

// runInteractive opens the TUI. Until the TUI lands it runs as --auto.
func runInteractive(cmd *cobra.Command, g *globalOptions, o *runOptions, b *manifest.Bundle, c *conn) error {
	fmt.Fprintln(cmd.ErrOrStderr(), "podstep: the interactive TUI is not available in this build: running as --auto")
	o.auto = true
	c.stop()
	return runPod(cmd, g, o)
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/session"
)

func newInfoCmd(g *globalOptions) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the runtime podstep would use: version, conditions, handlers, cgroup driver",
		Long: `info shows which runtime podstep picks and what it says about itself (CRI Version,
Status, RuntimeConfig). Exit code 0 when RuntimeReady and NetworkReady are true, 3 otherwise,
and 3 when no runtime answers (the simulated runtime only with --sim).
--wait keeps asking until the runtime is ready or the time is up.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			deadline := time.Now().Add(wait)
			for {
				err := showInfo(cmd, g)
				if err == nil || time.Now().After(deadline) {
					return err
				}
				select {
				case <-cmd.Context().Done():
					return err
				case <-time.After(250 * time.Millisecond):
				}
			}
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 0, "wait up to this long for the runtime to be ready")
	return cmd
}

func showInfo(cmd *cobra.Command, g *globalOptions) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
	defer cancel()
	ep := g.ep
	ep.NoFallback = true
	c, err := session.Connect(ctx, ep)
	if err != nil {
		return err
	}
	defer c.Stop()
	info, err := cri.Info(ctx, c.Client)
	if err != nil {
		return session.RuntimeErr(fmt.Errorf("runtime at %s: %w", c.Runtime.Endpoint, err))
	}
	info.Write(cmd.OutOrStdout(), c.Runtime.Endpoint, c.Runtime.Why, c.Runtime.Simulated)
	if !info.Ready {
		return session.Silent(ExitRuntime)
	}
	return nil
}

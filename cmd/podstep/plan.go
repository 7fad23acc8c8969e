package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/crictl"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/report"
	"github.com/podstep/podstep/internal/session"
	"github.com/podstep/podstep/internal/steps"
)

func newPlanCmd(g *globalOptions) *cobra.Command {
	o := &session.Options{GracePeriod: -1, BackoffScale: 1}
	var crictlDir, output string
	cmd := &cobra.Command{
		Use:   "plan -f FILE",
		Short: "Print the ordered steps and every CRI request they would send, contacting no runtime",
		Long: `plan prints the steps podstep would take for the pod, in the kubelet's order, each with
the kubelet function it mirrors and the CRI requests (YAML) it would send. IDs that only
the runtime can give (sandbox and container IDs, the pod IP, image IDs) are shown as
placeholders. No runtime is contacted and nothing is created.

--crictl DIR writes pod-config.json and one <container>-container-config.json per
container in the form crictl runp / crictl create accept, to replay a step by hand:
  crictl runp DIR/pod-config.json
  crictl create <POD-ID> DIR/<name>-container-config.json DIR/pod-config.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.CgroupDriverSet, o.Changed = cmd.Flags().Changed("cgroup-driver"), cmd.Flags().Changed
			g.dirsInto(o)
			o.NoTokens, o.Stderr = true, cmd.ErrOrStderr()
			if err := o.Validate(); err != nil {
				return err
			}
			if err := session.CheckOutput(output, "yaml", "json"); err != nil {
				return err
			}
			b, err := o.LoadManifest(cmd.InOrStdin())
			if err != nil {
				return err
			}
			eng := steps.New(b, nil, o.Engine(render.Runtime{}))
			if crictlDir != "" {
				wrote, err := crictl.Write(crictlDir, eng.Steps(), cmd.ErrOrStderr(), forceFlag(cmd))
				if err != nil {
					return session.OutputErr(fmt.Errorf("--crictl: %w", err))
				}
				fmt.Fprintln(cmd.OutOrStdout(), strings.Join(wrote, "\n"))
				if !cmd.Flags().Changed("output") {
					return nil // what it wrote, and only that; -o also prints the plan
				}
			}
			return report.WritePlan(cmd.OutOrStdout(), eng.Pod(), eng.Steps(), output, b.Notes, eng.Stops()...)
		},
	}
	o.AddPodFlags(cmd.Flags(), time.Second)
	o.AddClusterFlags(cmd.Flags())
	cmd.Flags().StringVar(&crictlDir, "crictl", "", "write crictl-ready JSON configs into this directory and list them (with -o, print the plan too)")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "yaml (readable, with comments) or json (one object per step)")
	return cmd
}

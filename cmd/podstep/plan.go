package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/session"
)

func newPlanCmd(g *globalOptions) *cobra.Command {
	o := &session.PlanCommand{Options: session.Options{GracePeriod: -1, BackoffScale: 1}}
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
			fl := cmd.Flags()
			o.CgroupDriverSet, o.Changed = fl.Changed("cgroup-driver"), fl.Changed
			g.dirsInto(&o.Options)
			o.OutputGiven, o.Force = fl.Changed("output"), forceFlag(cmd)
			o.Stdin, o.Stdout, o.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			return o.Execute()
		},
	}
	o.AddPodFlags(cmd.Flags(), time.Second)
	o.AddClusterFlags(cmd.Flags())
	cmd.Flags().StringVar(&o.CrictlDir, "crictl", "", "write crictl-ready JSON configs into this directory and list them (with -o, print the plan too)")
	cmd.Flags().StringVarP(&o.Output, "output", "o", "yaml", "yaml (readable, with comments) or json (one object per step)")
	return cmd
}

package main

import (
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/fleet"
)

// newFleetCmd is `podstep fleet`: flags → fleet.Flags → fleet.Command
// (the checks, the pod, the run, the output and exit code: internal/fleet).
func newFleetCmd(g *globalOptions) *cobra.Command {
	o := &fleet.Flags{Version: podstepVersion}
	cmd := &cobra.Command{
		Use:   "fleet -f POD.yaml | --pod NS/NAME [--nodes SELECTOR | --node N ...]",
		Short: "Replay one pod on many nodes of a cluster, each by a runner pod on the node, and name the odd node",
		Long: `fleet creates, for each selected node, a runner pod pinned to it (spec.nodeName, as
kubectl debug node does) that runs "podstep run --auto -o json" with the node's
kubelet settings (its configz, through the API server) on a shadow of the kubelet's
runtime: a private containerd the runner starts from the node's own binary, config,
runtimes and CNI plugins, in the host's mount namespace, out of the kubelet's sight,
removed at its end (--shadow=auto; docs/shadow.md). No setup on the nodes is needed.
The runtime of the node's podstep.dev/replay-endpoint annotation (one no kubelet
watches), or -r, is used as it is instead (docs/fleet.md). It
streams the runners' results, then prints a table of the nodes side by side, names the
nodes whose steps differ from the majority (the first differing step and the fields of
its requests that differ) and the stage times that are outliers.

Every object it creates carries the podstep.dev/fleet label and is owned by one parent
ConfigMap: podstep deletes them at the end and on Ctrl-C, and "podstep fleet cleanup"
(deleting the parents; the garbage collector does the rest) removes any a killed podstep
left. The runner image is the release image of this version (ghcr.io/podstep/podstep:VERSION)
unless --image names another, such as one built by hack/image-build.sh (docs/install.md).`,
		Example: `  podstep fleet -f pod.yaml --image registry.example/podstep:v1
  podstep fleet --pod web/web-7d4b9c-x2k9p --nodes node-role.kubernetes.io/worker= -o json
  podstep fleet -f pod.yaml --node node-a --node node-b --timeout 30s --record runs/
  podstep fleet cleanup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Endpoint = g.ep.Runtime
			return fleet.Command(cmd.Context(), *o, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	o.AddFlags(cmd.Flags())
	cmd.AddCommand(newFleetCleanupCmd())
	return cmd
}

func newFleetCleanupCmd() *cobra.Command {
	o := &fleet.Flags{}
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Delete what podstep fleets left in the cluster (their parents; the garbage collector removes the rest)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fleet.CleanupCommand(cmd.Context(), *o, cmd.OutOrStdout())
		},
	}
	o.AddCleanupFlags(cmd.Flags())
	return cmd
}

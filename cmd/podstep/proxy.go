package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/live"
	"github.com/podstep/podstep/internal/record"
	"github.com/podstep/podstep/internal/render"
	"github.com/podstep/podstep/internal/tui"
	"github.com/podstep/podstep/internal/watch"
)

var (
	_ tui.Engine    = (*watch.Pod)(nil)
	_ record.Source = (*watch.Pod)(nil)
)

func newProxyCmd(g *globalOptions) *cobra.Command {
	o := &watch.Flags{}
	serve := &live.Flags{}
	cmd := &cobra.Command{
		Use:   "proxy --listen ENDPOINT [--upstream ENDPOINT]",
		Short: "Watch a real kubelet: a CRI proxy that shows its calls as podstep's steps (and can hold them)",
		Long: `podstep proxy listens on a CRI socket and forwards every call, as bytes, to the
runtime behind it: point a kubelet's --container-runtime-endpoint at it (restarting the
kubelet) and podstep shows each call as the step of pod creation it belongs to, with the
pod's state rebuilt from the answers. --hold keeps the followed pod's calls until a keypress.
--csi DRIVER also stands in front of a CSI driver's node socket (taken over: the driver's
socket is moved aside and put back when the proxy exits), so that the kubelet's NodeStage/
NodePublish calls show in the pods' volumes stage.`,
		Example: `  podstep proxy --listen unix:///run/podstep/cri.sock --upstream unix:///run/containerd/containerd.sock --auto
  podstep proxy --listen unix:///run/podstep/cri.sock --pod default/web --record web.rec.gz --auto -o json
  podstep proxy --listen unix:///run/podstep/cri.sock --pod default/web --hold --hold-stage sandbox,init
  podstep proxy --listen unix:///run/podstep/cri.sock --csi hostpath.csi.k8s.io --record-dir /var/tmp/pods --auto`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			page, err := serve.Start(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer page.Close()
			if page != nil {
				o.Page = page
			}
			o.Force = forceFlag(cmd)
			return o.Run(cmd.Context(), watch.Env{Endpoints: g.ep, Version: podstepVersion(), Stdin: cmd.InOrStdin(),
				Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(), Terminal: isTerminal(cmd.OutOrStdout()), Flags: cmd.Flags(),
				TUI: func(ctx context.Context, p *watch.Pod, rt render.Runtime) error {
					// No Breaks: the hold has the --hold-stage stages already (the
					// TUI's b toggles them there, through the pod's ToggleBreakStage).
					_, err := tui.Run(ctx, p, tui.Options{Runtime: rt, Keep: true, NoColor: g.noColor, In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
					return err
				}})
		},
	}
	o.AddFlags(cmd.Flags())
	serve.AddFlags(cmd.Flags())
	return cmd
}

var (
	_ tui.Live      = (*watch.Pod)(nil)
	_ tui.NodeNoter = (*watch.Pod)(nil) // the PLEG banner
)

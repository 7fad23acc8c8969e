package main

import (
	"github.com/spf13/cobra"

	"github.com/podstep/podstep/internal/session"
)

func newBundleCmd(g *globalOptions) *cobra.Command {
	var o session.BundleOptions
	cmd := &cobra.Command{
		Use:   "bundle -o FILE.tar.gz [--recording FILE] [--pod NS/NAME]",
		Short: "Gather a bug report's bundle: the pod's recorded calls, the runtime's version, config and state, CNI and IPAM state, the kubelet's configz and events",
		Long: `bundle writes one tar.gz with what runtime maintainers ask for about a pod that would
not start: the recording of its calls (--recording: from run --record or proxy
--record-dir), the runtime's CRI Version and verbose Status (its effective config and
CNI state), its pod sandboxes and containers, the CNI configs and host-local IPAM state
(leaked addresses), the host's kernel, cgroup version and free space, and with --pod the
pod, its events and its node's kubelet configz from the API server. A README.txt says
what is inside and what could not be read. Values under password, auth, token and
secret keys are masked; recordings are redacted when written.`,
		Example: `  podstep bundle -o bug.tar.gz --recording web.rec.gz
  podstep bundle -o bug.tar.gz -r unix:///run/containerd/containerd.sock --pod shop/web-7d9c
  tar -tzf bug.tar.gz`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Version = podstepVersion()
			return session.Bundle(cmd.Context(), g.ep, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Out, "out", "o", "", "the tar.gz to write (- for stdout); required")
	f.StringVar(&o.Recording, "recording", "", "a recording of the pod's calls (run --record, proxy --record-dir)")
	f.StringVar(&o.CNIConfDir, "cni-conf-dir", "", "the CNI conf dir (default: the runtime's, else /etc/cni/net.d)")
	f.BoolVar(&o.NoRuntime, "no-runtime", false, "leave the runtime out (a bundle of a recording on another machine)")
	f.StringVar(&o.Pod, "pod", "", "the pod, [NAMESPACE/]NAME: its spec, events and its node's kubelet configz from the API server")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig file, as kubectl's (default: $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "kubeconfig context to use (default: its current-context)")
	f.BoolVar(&o.AllowExecPlugins, session.AllowExecPluginsFlag, false, session.AllowExecPluginsUsage)
	return cmd
}

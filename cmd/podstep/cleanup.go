package main

import (
	"github.com/spf13/cobra"

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
never touched. Then it removes the pod dirs under --root-dir and log dirs under --log-dir
whose podstep run has ended and whose runtime no longer has the pod (or is gone), and
what your runs on the simulated runtime left (a pod kept with --keep, a killed run).
With no runtime answering it still does the latter. It also puts back the CSI drivers'
sockets that a podstep proxy --csi killed with SIGKILL left moved aside (its marker in
/run/podstep-csi-proxy names them). And it removes the shadow runtimes a killed run left, and
the shadows' image cache kept between runs (/var/lib/podstep/shadow-cache, beside
PODSTEP_SHADOW_DIR; docs/shadow.md), each listed.

With --sim it only removes what your runs on the simulated runtime left in their dirs
(` + session.SimDirPrefix + `*, in $TMPDIR when set, else in $XDG_RUNTIME_DIR or /dev/shm when a
tmpfs, and in the temp dir) and, when given, under --root-dir and --log-dir (the pods a
run with those flags kept there): the runtime itself ended with each run. A dir there with
nothing but a socket no one listens on (a killed bench simulator's) goes too.

A directory is removed only once the runtime removed the sandbox (its containers may
use it until then), and only when podstep recorded making it: it holds podstep's
` + mark.File + ` file naming the pod, and lies where podstep puts it. A directory a
podstep run still going holds is left alone. Anything not removed is listed, and the
exit code is 4. Each dir is opened, checked and removed by directory handle, following
no link; a --root-dir or --log-dir another user could change (owned by another user,
writable by group or others) is refused with exit 2 before anything is removed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return session.Cleanup(cmd.Context(), session.CleanupOptions{Endpoints: g.ep, RootDir: g.rootDir, LogDir: g.logDir,
				RootDirGiven: g.rootSet, LogDirGiven: g.logSet, Grace: grace}, cmd.OutOrStdout())
		},
	}
	cmd.Flags().Int64Var(&grace, "grace-period", 2, "seconds StopContainer waits before SIGKILL")
	return cmd
}

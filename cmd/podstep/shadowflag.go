package main

import (
	"github.com/spf13/pflag"

	"github.com/podstep/podstep/internal/session"
)

// addShadowFlag binds run's --shadow (session.ShadowAuto, ...).
func addShadowFlag(f *pflag.FlagSet, o *session.RunFlags) {
	f.StringVar(&o.Shadow, "shadow", session.ShadowAuto, "replay on a private copy of the node's containerd (its binary, config, runtimes and CNI plugins; own dirs, sockets and network; removed at the end): auto (when a kubelet watches the runtime: its sandboxes are there), always, or never (the runtime itself); the simulated runtime is never shadowed")
}

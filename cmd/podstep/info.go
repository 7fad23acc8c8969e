package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/session"
)

func newInfoCmd(g *globalOptions) *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "info",
		Short: "Show the runtime podstep would use: version, conditions, handlers, cgroup driver",
		Long: `info shows which runtime podstep picks and what it says about itself (CRI Version,
Status, RuntimeConfig). Exit code 0 when RuntimeReady and NetworkReady are true, 3 otherwise.
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
	c, err := session.Connect(ctx, g.ep)
	if err != nil {
		return err
	}
	defer c.Stop()
	info, err := cri.Info(ctx, c.Client)
	if err != nil {
		return session.RuntimeErr(fmt.Errorf("runtime at %s: %w", c.Runtime.Endpoint, err))
	}
	w := cmd.OutOrStdout()
	sim := ""
	if c.Runtime.Simulated {
		sim = " (SIMULATED, built-in)"
	}
	fmt.Fprintf(w, "endpoint:      %s%s (%s)\n", c.Runtime.Endpoint, sim, c.Runtime.Why)
	fmt.Fprintf(w, "runtime:       %s %s (CRI %s)\n", info.Version.RuntimeName, info.Version.RuntimeVersion, info.Version.RuntimeApiVersion)
	for _, cond := range info.Status.GetStatus().GetConditions() {
		fmt.Fprintf(w, "condition:     %s=%t %s\n", cond.Type, cond.Status, cond.Message)
	}
	for _, h := range info.Status.RuntimeHandlers {
		name := h.Name
		if name == "" {
			name = `"" (default)`
		}
		fmt.Fprintf(w, "handler:       %s%s\n", name, handlerFeatures(h))
	}
	driver := info.CgroupDriver
	if driver == "" {
		driver = "not reported (RuntimeConfig unimplemented); podstep uses --cgroup-driver"
	}
	fmt.Fprintf(w, "cgroup driver: %s\n", driver)
	fmt.Fprintf(w, "pods:          %d made by podstep, %d by a kubelet\n", info.Managed, info.Foreign)
	if info.Foreign > 0 {
		fmt.Fprintln(w, "warning:       a kubelet uses this runtime; it garbage-collects pods it does not know, podstep's included")
	}
	if !info.Ready {
		return session.Silent(ExitRuntime)
	}
	return nil
}

// handlerFeatures lists the features a runtime handler reports in
// RuntimeStatus (the kubelet reads user_namespaces before it sends
// hostUsers: false, and recursive_read_only before a recursive read-only mount).
func handlerFeatures(h *runtimeapi.RuntimeHandler) string {
	f := h.GetFeatures()
	if f == nil {
		return ""
	}
	return fmt.Sprintf(" (user_namespaces=%t, recursive_read_only=%t)", f.UserNamespaces, f.RecursiveReadOnlyMounts)
}

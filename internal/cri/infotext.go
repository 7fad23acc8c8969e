package cri

import (
	"fmt"
	"io"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Write is `podstep info`'s text: the endpoint (and how it was chosen),
// the runtime's version, conditions, handlers, cgroup driver and pods.
func (i *RuntimeInfo) Write(w io.Writer, endpoint, why string, simulated bool) {
	sim := ""
	if simulated {
		sim = " (SIMULATED, built-in)"
	}
	fmt.Fprintf(w, "endpoint:      %s%s (%s)\n", endpoint, sim, why)
	fmt.Fprintf(w, "runtime:       %s %s (CRI %s)\n", i.Version.RuntimeName, i.Version.RuntimeVersion, i.Version.RuntimeApiVersion)
	for _, cond := range i.Status.GetStatus().GetConditions() {
		fmt.Fprintf(w, "condition:     %s=%t %s\n", cond.Type, cond.Status, cond.Message)
	}
	for _, h := range i.Status.RuntimeHandlers {
		name := h.Name
		if name == "" {
			name = `"" (default)`
		}
		fmt.Fprintf(w, "handler:       %s%s\n", name, handlerFeatures(h))
	}
	driver := i.CgroupDriver
	if driver == "" {
		driver = "not reported (RuntimeConfig unimplemented); podstep uses --cgroup-driver"
	}
	fmt.Fprintf(w, "cgroup driver: %s\n", driver)
	fmt.Fprintf(w, "pods:          %d made by podstep, %d by a kubelet\n", i.Managed, i.Foreign)
	if i.Foreign > 0 {
		fmt.Fprintln(w, "warning:       a kubelet uses this runtime; it garbage-collects pods it does not know, podstep's included")
	}
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

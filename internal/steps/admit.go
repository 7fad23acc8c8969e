package steps

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/reason"
)

// admitStep mirrors the kubelet's admission of a new pod: HandlePodAdditions
// (pkg/kubelet/kubelet.go) asks the allocation manager, whose AddPod calls
// canAdmitPod (pkg/kubelet/allocation/allocation_manager.go; in v1.37 it is
// the allocation manager's method, not the Kubelet's). canAdmitPod runs the admit handlers in the
// order NewMainKubelet handed them to AddPodAdmitHandlers (the resize
// handler, which admits every new pod, then eviction, sysctl allowlist,
// resource allocation, predicateAdmitHandler, AppArmor, pod features,
// node shutdown) and stops at the first that rejects. A rejected pod is
// Failed with the handler's reason (rejectPod) and never reaches the
// runtime.
type admitStep struct{}

func (admitStep) mirrors() string {
	return "Kubelet.HandlePodAdditions (pkg/kubelet/kubelet.go) → allocationManager.AddPod → canAdmitPod (pkg/kubelet/allocation/allocation_manager.go), predicateAdmitHandler.Admit (pkg/kubelet/lifecycle/predicate.go)"
}

func (admitStep) explain() string {
	return "Before doing anything for a new pod, the kubelet asks its admit handlers whether the node can run it: the pod's resource requests (the larger of its init containers' and the sum of its containers', plus overhead) must fit the node's allocatable resources, and the node must still accept one more pod. A rejected pod goes straight to Failed."
}

func (admitStep) requests(e *Engine) []Request {
	if e.needsRuntimeFeatures() {
		return []Request{runtimeFeaturesRequest()}
	}
	return nil
}

// WorkloadDetail is the admit step's detail saying which workload's
// controller rules made the pod (internal/workload), when -f held one.
const WorkloadDetail = "workload"

func (admitStep) run(ctx context.Context, e *Engine) Result {
	n := e.opts.Node
	details := []Detail{kv("node", fmt.Sprintf("%s (%s)", n.Name(), n.Source))}
	if e.needsRuntimeFeatures() && e.client != nil {
		d, err := e.learnRuntimeFeatures(ctx)
		if err != nil {
			return fail(reason.Error, err, err.Error())
		}
		details = append(details, d)
	}
	v := node.Admit(e.pod, n)
	for _, note := range n.Notes {
		details = append(details, kv("node default", note))
	}
	if w := e.bundle.Workload; w != nil {
		details = append(details, kv(WorkloadDetail, w.Summary()))
	}
	for _, note := range e.bundle.Notes {
		// The workload rules that made the pod (internal/workload) and
		// the documents of the file podstep skipped.
		details = append(details, kv("manifest", note))
	}
	if len(n.Existing) > 0 {
		var names []string
		for _, p := range n.Existing {
			names = append(names, p.Name)
		}
		details = append(details, kv("other pods", strings.Join(names, ", ")))
	}
	for _, c := range v.Checks {
		mark := " ✓"
		if !c.OK {
			mark = " ✗"
		}
		details = append(details, kv(c.Name, c.Detail+mark))
	}
	if !v.Admit {
		r := e.reject(Result{Summary: "rejected: " + v.Message, Reason: v.Reason, Message: v.Message, Err: errors.New(v.Message)}, details)
		r.Warnings = append(slices.Clone(n.Warnings), e.dropped...)
		return r
	}
	e.tracker.Admitted(e.hostIP())
	r := ok(fmt.Sprintf("admitted on node %s (cpu %dm, memory %s requested)", n.Name(),
		v.Requests.Cpu().MilliValue(), v.Requests.Memory().String()), details...)
	r.Warnings = append(slices.Clone(n.Warnings), e.dropped...)
	return r
}

// reject fails the step as the kubelet's rejectPod does: a Warning event
// with the handler's reason and message, and the pod Failed with that
// reason and "Pod was rejected: " + message.
func (e *Engine) reject(r Result, details []Detail) Result {
	r.Details = details
	e.tracker.Rejected(r.Reason, "Pod was rejected: "+r.Message)
	e.tracker.Record(corev1.EventTypeWarning, r.Reason, "", r.Message)
	return r
}

// hostIP is the pod's hostIP as the kubelet's getHostIPsAnyWay gives it:
// the Node's first InternalIP, else its first ExternalIP
// (GetNodeHostIPs, k8s.io/component-helpers/node/util); a Node without
// addresses (podstep's model of this machine) has this machine's (nodeIP).
func (e *Engine) hostIP() string {
	if n := e.opts.Node; n != nil {
		for _, t := range []corev1.NodeAddressType{corev1.NodeInternalIP, corev1.NodeExternalIP} {
			for _, a := range n.Object.Status.Addresses {
				if a.Type == t && net.ParseIP(a.Address) != nil {
					return a.Address
				}
			}
		}
	}
	return nodeIP()
}

// hostIPs are the node's IPs a container's status.hostIP(s) env is made
// of (podFieldSelectorRuntimeValue: getHostIPsAnyWay), hostIP's.
func (e *Engine) hostIPs() []string {
	if ip := e.hostIP(); ip != "" {
		return []string{ip}
	}
	return nil
}

// nodeIP is this machine's first non-loopback IPv4 address.
func nodeIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

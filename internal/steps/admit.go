package steps

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// admitStep mirrors the kubelet's admission of a new pod: HandlePodAdditions
// asks canAdmitPod, whose predicate admit handler compares the pod's
// requests with what the node has left. A rejected pod is Failed with the
// handler's reason and never reaches the runtime.
type admitStep struct{}

func (admitStep) mirrors() string {
	return "Kubelet.HandlePodAdditions → canAdmitPod (pkg/kubelet/kubelet.go), predicateAdmitHandler.Admit (pkg/kubelet/lifecycle/predicate.go)"
}

func (admitStep) explain() string {
	return "Before doing anything for a new pod, the kubelet asks its admit handlers whether the node can run it: the pod's resource requests (the larger of its init containers' and the sum of its containers', plus overhead) must fit the node's allocatable resources, and the node must still accept one more pod. A rejected pod goes straight to Failed."
}

func (admitStep) requests(*Engine) []Request { return nil }

func (admitStep) run(_ context.Context, e *Engine) Result {
	node := e.opts.Node
	if node == nil {
		node = LocalNode()
	}
	reqs := resourcehelper.PodRequests(e.pod, resourcehelper.PodResourcesOptions{})
	var details []Detail
	check := func(name corev1.ResourceName, format func(resource.Quantity) string) *Result {
		alloc := node.Status.Allocatable[name]
		req := reqs[name]
		details = append(details, kv(string(name), fmt.Sprintf("requested %s of %s allocatable", format(req), format(alloc))))
		if req.Cmp(alloc) > 0 {
			msg := fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, value(name, req), 0, value(name, alloc))
			r := Result{Summary: "rejected: " + msg, Reason: "OutOf" + string(name), Message: msg, Err: fmt.Errorf("%s", msg)}
			return &r
		}
		return nil
	}
	if r := check(corev1.ResourceCPU, func(q resource.Quantity) string { return fmt.Sprintf("%dm", q.MilliValue()) }); r != nil {
		return e.reject(*r, details)
	}
	if r := check(corev1.ResourceMemory, func(q resource.Quantity) string { return q.String() }); r != nil {
		return e.reject(*r, details)
	}
	pods := node.Status.Allocatable[corev1.ResourcePods]
	details = append(details, kv("pods", fmt.Sprintf("1 of %d allowed", pods.Value())))
	if pods.Value() < 1 {
		msg := "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0"
		return e.reject(Result{Summary: "rejected: " + msg, Reason: "OutOfpods", Message: msg, Err: fmt.Errorf("%s", msg)}, details)
	}
	details = append(details, kv("node", node.Name))
	e.tracker.Admitted(nodeIP())
	r := ok(fmt.Sprintf("admitted on node %s (cpu %dm, memory %s requested)", node.Name,
		reqs.Cpu().MilliValue(), reqs.Memory().String()), details...)
	return r
}

func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

func (e *Engine) reject(r Result, details []Detail) Result {
	r.Details = details
	e.tracker.Rejected(r.Reason, r.Message)
	e.tracker.Record("Warning", r.Reason, "", r.Message)
	return r
}

// LocalNode describes this machine as a kubelet would register it: its CPU
// count and memory as allocatable, the kubelet's default of 110 pods, and
// the well-known hostname/os/arch labels.
func LocalNode() *corev1.Node {
	name, _ := os.Hostname()
	name = strings.ToLower(name)
	return &corev1.Node{
		ObjectMeta: metav1ObjectMeta(name, map[string]string{
			"kubernetes.io/hostname": name,
			"kubernetes.io/os":       runtime.GOOS,
			"kubernetes.io/arch":     runtime.GOARCH,
		}),
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(int64(runtime.NumCPU())*1000, resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity(memTotal(), resource.BinarySI),
				corev1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
			},
		},
	}
}

// memTotal reads MemTotal from /proc/meminfo (0 when unreadable).
func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// nodeIP is the node's first non-loopback IPv4 address (the pod's hostIP).
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

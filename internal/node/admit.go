package node

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"

	"github.com/podstep/podstep/internal/podcfg"
	"github.com/podstep/podstep/internal/reason"
)

// The predicate handler's failure texts; the rejection reasons are in
// package reason.
const (
	errReasonNodeAffinity = "node(s) didn't match Pod's node affinity/selector"
	errReasonNodeName     = "node(s) didn't match the requested node name"
	errReasonNodePorts    = "node(s) didn't have free ports for the requested pod ports"
	errReasonTaints       = "node(s) had taints that the pod didn't tolerate"
)

// Check is one comparison an admit handler made.
type Check struct {
	// Handler is the kubelet admit handler that made it: eviction, sysctl
	// or predicate.
	Handler string
	// Name is what was checked: "cpu", "node affinity", ...
	Name string
	// Detail gives the figures compared, e.g. "requested 500m + used 0m ≤ allocatable 2000m".
	Detail string
	// OK is false when the check failed.
	OK bool
}

// Verdict is the outcome of admission: every check made, and on rejection
// the kubelet's reason and message (the first failure, as the kubelet
// reports only the first).
type Verdict struct {
	Checks  []Check
	Admit   bool
	Reason  string
	Message string
	// Requests are the pod's effective requests (resourcehelper.PodRequests).
	Requests corev1.ResourceList
}

// Admit runs the kubelet's admit handlers on pod in the kubelet's order
// (NewMainKubelet registers them: eviction, sysctl allowlist, resource
// allocation, predicate) and stops at the first handler that rejects. The
// predicate handler, like the kubelet's generalFilter, evaluates every check
// and reports the first failure.
func Admit(pod *corev1.Pod, n *Node) Verdict {
	v := Verdict{Admit: true, Requests: resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})}
	for _, h := range []func(*corev1.Pod, *Node, *Verdict) bool{admitEviction, admitSysctls, admitPredicates} {
		if !h(pod, n, &v) {
			v.Admit = false
			return v
		}
	}
	return v
}

func (v *Verdict) add(handler, name string, ok bool, format string, args ...any) {
	v.Checks = append(v.Checks, Check{Handler: handler, Name: name, Detail: fmt.Sprintf(format, args...), OK: ok})
}

// reject records the first failure.
func (v *Verdict) reject(why, message string) {
	if v.Reason == "" {
		v.Reason, v.Message = why, message
	}
}

// IsStaticPod mirrors kubetypes.IsStaticPod: a pod whose
// kubernetes.io/config.source annotation names a source other than the API
// server. A manifest pod without the annotation is treated like an API pod.
func IsStaticPod(pod *corev1.Pod) bool {
	src, ok := pod.Annotations[podcfg.AnnotationConfigSource]
	return ok && src != "api"
}

// systemCriticalPriority is scheduling.SystemCriticalPriority.
const systemCriticalPriority = 2 * 1000000000

// isCriticalPod mirrors kubetypes.IsCriticalPod.
func isCriticalPod(pod *corev1.Pod) bool {
	if IsStaticPod(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// admitEviction mirrors the eviction manager's Admit
// (pkg/kubelet/eviction/eviction_manager.go): under memory pressure only
// BestEffort pods are refused (unless they tolerate the memory-pressure
// taint); under any other pressure every pod is, critical pods excepted.
// podstep reads the pressure from the node's status.conditions.
func admitEviction(pod *corev1.Pod, n *Node, v *Verdict) bool {
	var conds []string
	for _, c := range n.Object.Status.Conditions {
		switch c.Type {
		case corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure:
			if c.Status == corev1.ConditionTrue {
				conds = append(conds, string(c.Type))
			}
		}
	}
	if len(conds) == 0 {
		v.add("eviction", "node pressure", true, "no MemoryPressure, DiskPressure or PIDPressure condition")
		return true
	}
	if isCriticalPod(pod) {
		v.add("eviction", "node pressure", true, "node has %v; the pod is critical and admitted anyway", conds)
		return true
	}
	if len(conds) == 1 && conds[0] == string(corev1.NodeMemoryPressure) {
		qos := podcfg.QOSClass(pod)
		if qos != corev1.PodQOSBestEffort {
			v.add("eviction", "node pressure", true, "node has [MemoryPressure]; the pod is %s, only BestEffort pods are refused", qos)
			return true
		}
		taint := &corev1.Taint{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule}
		if corev1helpers.TolerationsTolerateTaint(klog.Background(), pod.Spec.Tolerations, taint, false) {
			v.add("eviction", "node pressure", true, "node has [MemoryPressure]; the BestEffort pod tolerates %s", taint.Key)
			return true
		}
	}
	msg := fmt.Sprintf("The node had condition: %v. ", "["+strings.Join(conds, " ")+"]")
	v.add("eviction", "node pressure", false, "node has [%s]; %s pods are refused", strings.Join(conds, " "), refusedKind(conds))
	v.reject(reason.Evicted, msg)
	return false
}

func refusedKind(conds []string) string {
	if len(conds) == 1 && conds[0] == string(corev1.NodeMemoryPressure) {
		return "BestEffort"
	}
	return "all non-critical"
}

// admitPredicates mirrors predicateAdmitHandler.Admit
// (pkg/kubelet/lifecycle/predicate.go).
func admitPredicates(pod *corev1.Pod, n *Node, v *Verdict) bool {
	const h = "predicate"
	// Checks preemption would not help come first, and return at once.
	nodeOS := n.OS()
	if want, ok := pod.Labels[corev1.LabelOSStable]; ok {
		if want != nodeOS {
			v.add(h, "os label", false, "pod label %s=%s ≠ node %s", corev1.LabelOSStable, want, nodeOS)
			v.reject(reason.PodOSSelectorNodeLabelDoesNotMatch, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
			return false
		}
		v.add(h, "os label", true, "pod label %s=%s = node %s", corev1.LabelOSStable, want, nodeOS)
	}
	if pod.Spec.OS != nil {
		if string(pod.Spec.OS.Name) != nodeOS {
			v.add(h, "os", false, "spec.os.name %s ≠ node %s", pod.Spec.OS.Name, nodeOS)
			v.reject(reason.PodOSNotSupported, "Failed to admit pod as the OS field doesn't match node OS")
			return false
		}
		v.add(h, "os", true, "spec.os.name %s = node %s", pod.Spec.OS.Name, nodeOS)
	}
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SupplementalGroupsPolicy != nil &&
		*sc.SupplementalGroupsPolicy == corev1.SupplementalGroupsPolicyStrict {
		f := n.Object.Status.Features
		if f == nil || f.SupplementalGroupsPolicy == nil || !*f.SupplementalGroupsPolicy {
			v.add(h, "supplementalGroupsPolicy", false, "Strict, but the node's status.features.supplementalGroupsPolicy is not true")
			v.reject(reason.SupplementalGroupsPolicyNotSupported, fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", corev1.SupplementalGroupsPolicyStrict))
			return false
		}
		v.add(h, "supplementalGroupsPolicy", true, "Strict, supported by the node")
	}

	// generalFilter → scheduler.AdmissionCheck: resources, node affinity,
	// node name, host ports (all evaluated, the first failure reported),
	// then NoExecute taints.
	ok := admitResources(pod, n, v)
	ok = admitAffinity(pod, n, v) && ok
	ok = admitNodeName(pod, n, v) && ok
	ok = admitPorts(pod, n, v) && ok
	ok = admitTaints(pod, n, v) && ok
	return ok
}

// admitResources mirrors noderesources.Fits → fitsRequest
// (pkg/scheduler/framework/plugins/noderesources/fit.go): pods, then cpu,
// memory, ephemeral-storage, then the other (scalar) resources. Extended
// resources the node does not advertise are dropped first, as
// removeMissingExtendedResources does.
func admitResources(pod *corev1.Pod, n *Node, v *Verdict) bool {
	const h = "predicate"
	alloc := n.Object.Status.Allocatable
	used := corev1.ResourceList{}
	for _, p := range n.Existing {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			u := used[name]
			u.Add(q)
			used[name] = u
		}
	}
	ok := true
	insufficient := func(name corev1.ResourceName, req, usedV, capV int64) {
		ok = false
		v.reject(reason.InsufficientResourcePrefix+string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, req, usedV, capV))
	}

	maxPods := alloc.Pods().Value()
	others := int64(len(n.Existing))
	if others+1 > maxPods {
		v.add(h, "pods", false, "1 + %d on the node > %d allowed", others, maxPods)
		insufficient(corev1.ResourcePods, 1, others, maxPods)
	} else {
		v.add(h, "pods", true, "1 + %d on the node ≤ %d allowed", others, maxPods)
	}

	reqs := v.Requests
	var scalars []corev1.ResourceName
	for name := range reqs {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
		default:
			scalars = append(scalars, name)
		}
	}
	sort.Slice(scalars, func(i, j int) bool { return scalars[i] < scalars[j] })

	allZero := true
	for _, q := range reqs {
		if !q.IsZero() {
			allZero = false
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		req, u, a := reqs[name], used[name], alloc[name]
		if req.IsZero() {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				v.add(h, string(name), true, "requested %s + used %s ≤ allocatable %s (nothing requested)", show(name, req), show(name, u), show(name, a))
			}
			continue
		}
		rv, uv, av := value(name, req), value(name, u), value(name, a)
		if rv > av-uv {
			v.add(h, string(name), false, "requested %s + used %s > allocatable %s", show(name, req), show(name, u), show(name, a))
			insufficient(name, rv, uv, av)
			continue
		}
		v.add(h, string(name), true, "requested %s + used %s ≤ allocatable %s", show(name, req), show(name, u), show(name, a))
	}
	if allZero {
		return ok
	}
	for _, name := range scalars {
		req := reqs[name]
		if req.IsZero() {
			continue
		}
		a, has := alloc[name]
		if isExtendedResourceName(name) && !has {
			v.add(h, string(name), true, "requested %s, ignored: the node does not advertise it (removeMissingExtendedResources)", req.String())
			continue
		}
		u := used[name]
		if req.Value() > a.Value()-u.Value() {
			v.add(h, string(name), false, "requested %s + used %s > allocatable %s", req.String(), u.String(), a.String())
			insufficient(name, req.Value(), u.Value(), a.Value())
			continue
		}
		v.add(h, string(name), true, "requested %s + used %s ≤ allocatable %s", req.String(), u.String(), a.String())
	}
	return ok
}

// value is the figure the kubelet's message shows: millicores for cpu,
// bytes or units otherwise.
func value(name corev1.ResourceName, q resource.Quantity) int64 {
	if name == corev1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// show formats a quantity for a detail line.
func show(name corev1.ResourceName, q resource.Quantity) string {
	if name == corev1.ResourceCPU {
		return fmt.Sprintf("%dm", q.MilliValue())
	}
	b := q.Value()
	switch {
	case b == 0:
		return "0"
	case b%(1<<30) == 0:
		return fmt.Sprintf("%dGi", b>>30)
	case b%(1<<20) == 0:
		return fmt.Sprintf("%dMi", b>>20)
	case b >= 1<<30:
		return fmt.Sprintf("%.1fGi", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1fMi", float64(b)/(1<<20))
	}
	return q.String()
}

// isExtendedResourceName mirrors v1helper.IsExtendedResourceName: a
// domain-prefixed name outside kubernetes.io, not a requests. quota name.
func isExtendedResourceName(name corev1.ResourceName) bool {
	s := string(name)
	domain, _, ok := strings.Cut(s, "/")
	if !ok || strings.HasPrefix(s, "requests.") {
		return false
	}
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}

// admitAffinity mirrors AdmissionCheck's
// corev1nodeaffinity.GetRequiredNodeAffinity(pod).Match(node).
func admitAffinity(pod *corev1.Pod, n *Node, v *Verdict) bool {
	const h = "predicate"
	var what []string
	if len(pod.Spec.NodeSelector) > 0 {
		keys := make([]string, 0, len(pod.Spec.NodeSelector))
		for k := range pod.Spec.NodeSelector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var sel []string
		for _, k := range keys {
			have, ok := n.Object.Labels[k]
			switch {
			case !ok:
				sel = append(sel, fmt.Sprintf("%s=%s (node: no such label)", k, pod.Spec.NodeSelector[k]))
			case have != pod.Spec.NodeSelector[k]:
				sel = append(sel, fmt.Sprintf("%s=%s (node: %s)", k, pod.Spec.NodeSelector[k], have))
			default:
				sel = append(sel, fmt.Sprintf("%s=%s", k, have))
			}
		}
		what = append(what, "nodeSelector "+strings.Join(sel, ", "))
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		what = append(what, fmt.Sprintf("required node affinity (%d term(s))", len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms)))
	}
	if len(what) == 0 {
		v.add(h, "node affinity", true, "the pod has no nodeSelector and no required node affinity")
		return true
	}
	match, err := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n.Object)
	desc := strings.Join(what, "; ")
	if err != nil {
		desc += " (" + err.Error() + ")"
	}
	if !match {
		v.add(h, "node affinity", false, "%s: no match on node %s", desc, n.Name())
		v.reject(reason.NodeAffinity, predicateMessage(reason.NodeAffinity, errReasonNodeAffinity))
		return false
	}
	v.add(h, "node affinity", true, "%s: matches node %s", desc, n.Name())
	return true
}

// predicateMessage is PredicateFailureError.Error().
func predicateMessage(name, desc string) string {
	return fmt.Sprintf("Predicate %s failed: %s", name, desc)
}

// admitNodeName mirrors nodename.Fits.
func admitNodeName(pod *corev1.Pod, n *Node, v *Verdict) bool {
	const h = "predicate"
	switch pod.Spec.NodeName {
	case "":
		v.add(h, "node name", true, "spec.nodeName unset")
	case n.Name():
		v.add(h, "node name", true, "spec.nodeName %s = node %s", pod.Spec.NodeName, n.Name())
	default:
		v.add(h, "node name", false, "spec.nodeName %s ≠ node %s: the pod is bound to another node; give --node the Node %s (kubectl get node %s -o yaml), or remove spec.nodeName", pod.Spec.NodeName, n.Name(), pod.Spec.NodeName, pod.Spec.NodeName)
		v.reject(reason.NodeName, predicateMessage(reason.NodeName, errReasonNodeName))
		return false
	}
	return true
}

// hostPorts lists the host ports pods ask for, as the nodeports plugin's
// getContainerPorts does (regular containers' ports).
func hostPorts(pods ...*corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range pods {
		for _, c := range p.Spec.Containers {
			for _, port := range c.Ports {
				if port.HostPort > 0 {
					out = append(out, port)
				}
			}
		}
	}
	return out
}

func portKey(p corev1.ContainerPort) (ip, proto string) {
	ip, proto = p.HostIP, string(p.Protocol)
	if ip == "" {
		ip = "0.0.0.0"
	}
	if proto == "" {
		proto = "TCP"
	}
	return ip, proto
}

// conflicts mirrors HostPortInfo.CheckConflict: 0.0.0.0 conflicts with the
// same protocol/port on any IP, a specific IP with itself and 0.0.0.0.
func conflicts(want corev1.ContainerPort, used []corev1.ContainerPort) (corev1.ContainerPort, bool) {
	wip, wproto := portKey(want)
	for _, u := range used {
		uip, uproto := portKey(u)
		if uproto != wproto || u.HostPort != want.HostPort {
			continue
		}
		if wip == "0.0.0.0" || uip == "0.0.0.0" || uip == wip {
			return u, true
		}
	}
	return corev1.ContainerPort{}, false
}

func showPort(p corev1.ContainerPort) string {
	ip, proto := portKey(p)
	return fmt.Sprintf("%s:%d/%s", ip, p.HostPort, proto)
}

// admitPorts mirrors nodeports.Fits.
func admitPorts(pod *corev1.Pod, n *Node, v *Verdict) bool {
	const h = "predicate"
	want := hostPorts(pod)
	if len(want) == 0 {
		v.add(h, "host ports", true, "the pod asks for no host port")
		return true
	}
	used := hostPorts(n.Existing...)
	var parts []string
	ok := true
	for _, w := range want {
		if u, bad := conflicts(w, used); bad {
			owner := ""
			for _, p := range n.Existing {
				for _, c := range p.Spec.Containers {
					for _, cp := range c.Ports {
						if cp == u && owner == "" {
							owner = p.Name
						}
					}
				}
			}
			parts = append(parts, fmt.Sprintf("%s taken by pod %s", showPort(w), owner))
			ok = false
			continue
		}
		parts = append(parts, showPort(w)+" free")
	}
	if !ok {
		v.add(h, "host ports", false, "%s", strings.Join(parts, ", "))
		v.reject(reason.NodePorts, predicateMessage(reason.NodePorts, errReasonNodePorts))
		return false
	}
	v.add(h, "host ports", true, "%s", strings.Join(parts, ", "))
	return true
}

// admitTaints mirrors generalFilter's taint check: only NoExecute taints
// (NoSchedule is the scheduler's business), and not for static pods.
func admitTaints(pod *corev1.Pod, n *Node, v *Verdict) bool {
	const h = "predicate"
	var noExec []corev1.Taint
	for _, t := range n.Object.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			noExec = append(noExec, t)
		}
	}
	if len(noExec) == 0 {
		v.add(h, "taints", true, "no NoExecute taint on the node (the kubelet checks only NoExecute)")
		return true
	}
	if IsStaticPod(pod) {
		v.add(h, "taints", true, "%d NoExecute taint(s) not checked: the pod is static", len(noExec))
		return true
	}
	taint, untolerated := corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), n.Object.Spec.Taints, pod.Spec.Tolerations,
		func(t *corev1.Taint) bool { return t.Effect == corev1.TaintEffectNoExecute }, false)
	if untolerated {
		v.add(h, "taints", false, "NoExecute taint %s not tolerated", taint.ToString())
		v.reject(reason.TaintToleration, predicateMessage(reason.TaintToleration, errReasonTaints))
		return false
	}
	v.add(h, "taints", true, "%d NoExecute taint(s), all tolerated", len(noExec))
	return true
}

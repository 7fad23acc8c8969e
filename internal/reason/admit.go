package reason

// Admission rejection reasons: the pod's status.reason when the kubelet
// refuses it (Kubelet.HandlePodAdditions → allocationManager.AddPod →
// canAdmitPod, pkg/kubelet/allocation/allocation_manager.go).
const (
	// PodOSSelectorNodeLabelDoesNotMatch mirrors
	// lifecycle.PodOSSelectorNodeLabelDoesNotMatch.
	PodOSSelectorNodeLabelDoesNotMatch = "PodOSSelectorNodeLabelDoesNotMatch"
	// PodOSNotSupported mirrors lifecycle.PodOSNotSupported.
	PodOSNotSupported = "PodOSNotSupported"
	// SupplementalGroupsPolicyNotSupported mirrors
	// lifecycle.SupplementalGroupsPolicyNotSupported.
	SupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"
	// InsufficientResourcePrefix mirrors lifecycle.InsufficientResourcePrefix:
	// "OutOfcpu", "OutOfmemory", "OutOf<resource>".
	InsufficientResourcePrefix = "OutOf"
	// SysctlForbidden mirrors sysctl.ForbiddenReason
	// (pkg/kubelet/sysctl/allowlist.go).
	SysctlForbidden = "SysctlForbidden"
	// Evicted mirrors eviction.Reason (pkg/kubelet/eviction/helpers.go):
	// the node is under pressure the pod's QoS class does not survive.
	Evicted = "Evicted"

	// The scheduler plugins whose filters the kubelet's predicate handler
	// runs report their names as reasons
	// (pkg/scheduler/framework/plugins/names/names.go).

	// NodeAffinity mirrors names.NodeAffinity (nodeSelector, node affinity).
	NodeAffinity = "NodeAffinity"
	// NodeName mirrors names.NodeName.
	NodeName = "NodeName"
	// NodePorts mirrors names.NodePorts (hostPort conflicts).
	NodePorts = "NodePorts"
	// TaintToleration mirrors names.TaintToleration.
	TaintToleration = "TaintToleration"
)

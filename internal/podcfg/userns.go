package podcfg

import (
	"encoding/json"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UserNamespaceIDs is the number of host IDs the kubelet gives each pod in
// its own user namespace (kubeletconfig DefaultKubeletUserNamespacesIDsPerPod,
// userns_manager.go userNsUnitLength): 65536.
const UserNamespaceIDs = 65536

// UserNamespaceFile is the file in the pod dir where the kubelet records a
// pod's mappings (userns_manager.go mappingsFile), read back on restart
// (recordPodMappings) so that a range is never given twice.
const UserNamespaceFile = "userns"

// UserNamespaceRecord is the JSON of UserNamespaceFile (userns_manager.go
// userNamespace and idMapping).
type UserNamespaceRecord struct {
	UIDMappings []IDMapping `json:"uidMappings"`
	GIDMappings []IDMapping `json:"gidMappings"`
}

// IDMapping is one range of a UserNamespaceRecord.
type IDMapping struct {
	HostID      uint32 `json:"hostId"`
	ContainerID uint32 `json:"containerId"`
	Length      uint32 `json:"length"`
}

// NewUserNamespace is the pod's mapping for the range that starts at host
// ID first: container IDs 0..65535 onto first..first+65535, the same for
// uids and gids (userns_manager.go createUserNs).
func NewUserNamespace(first uint32) UserNamespaceRecord {
	m := []IDMapping{{HostID: first, ContainerID: 0, Length: UserNamespaceIDs}}
	return UserNamespaceRecord{UIDMappings: m, GIDMappings: append([]IDMapping(nil), m...)}
}

// ParseUserNamespace reads a UserNamespaceFile, with the checks of
// userns_manager.go parseUserNsFileAndRecord: one uid and one gid mapping,
// equal, of the kubelet's length, starting at container ID 0, at a host ID
// that is a multiple of the length.
func ParseUserNamespace(data []byte) (UserNamespaceRecord, error) {
	var r UserNamespaceRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("user namespace record: %w", err)
	}
	if len(r.UIDMappings) != 1 || len(r.GIDMappings) != 1 {
		return r, fmt.Errorf("user namespace record: want one uid and one gid mapping, got %d and %d", len(r.UIDMappings), len(r.GIDMappings))
	}
	u, g := r.UIDMappings[0], r.GIDMappings[0]
	switch {
	case u != g:
		return r, fmt.Errorf("user namespace record: uid mapping %+v and gid mapping %+v differ", u, g)
	case u.ContainerID != 0:
		return r, fmt.Errorf("user namespace record: container ID %d, want 0", u.ContainerID)
	case u.Length != UserNamespaceIDs || u.HostID%UserNamespaceIDs != 0:
		return r, fmt.Errorf("user namespace record: host IDs %d+%d, want a multiple of %d, %d long", u.HostID, u.Length, UserNamespaceIDs, UserNamespaceIDs)
	}
	return r, nil
}

// FirstFreeUserNamespace is the first range the kubelet's allocator could
// give a new pod, given the ranges used (by their first host ID). The kubelet
// owns host IDs from 65536 on when no "kubelet" user has subordinate IDs
// (kubelet_pods.go getKubeletMappings: the first range, 0-65535, is the
// host's own and never mapped). Its allocator (allocator.NewAllocationMap,
// a random scan) picks a random free range; podstep takes the first free
// one, so that the plan is the same each time.
func FirstFreeUserNamespace(used []uint32) (uint32, error) {
	taken := map[uint32]bool{}
	for _, u := range used {
		taken[u] = true
	}
	for first := uint64(UserNamespaceIDs); first+UserNamespaceIDs <= math.MaxUint32+1; first += UserNamespaceIDs {
		if !taken[uint32(first)] {
			return uint32(first), nil
		}
	}
	return 0, fmt.Errorf("could not find an empty slot to allocate a user namespace")
}

// CRI is the record as the CRI's UserNamespace of mode POD
// (GetOrCreateUserNamespaceMappings).
func (r UserNamespaceRecord) CRI() *runtimeapi.UserNamespace {
	conv := func(ms []IDMapping) []*runtimeapi.IDMapping {
		var out []*runtimeapi.IDMapping
		for _, m := range ms {
			out = append(out, &runtimeapi.IDMapping{HostId: m.HostID, ContainerId: m.ContainerID, Length: m.Length})
		}
		return out
	}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: conv(r.UIDMappings), Gids: conv(r.GIDMappings)}
}

// OwnUserNamespace reports whether the pod asks for its own user namespace
// (spec.hostUsers: false).
func OwnUserNamespace(pod *corev1.Pod) bool {
	return pod.Spec.HostUsers != nil && !*pod.Spec.HostUsers
}

// userNamespace mirrors GetOrCreateUserNamespaceMappings
// (pkg/kubelet/userns/userns_manager.go), UserNamespacesSupport being GA
// and locked on in v1.37: mode NODE for hostUsers unset or true; for
// hostUsers: false, the pod's mappings, which the caller allocated
// (Options.UserNamespace: podcfg reads nothing from the machine).
func userNamespace(pod *corev1.Pod, o Options) (*runtimeapi.UserNamespace, error) {
	if !OwnUserNamespace(pod) {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	if o.UserNamespace == nil {
		return nil, fmt.Errorf("pod %s: hostUsers: false, but no user namespace mappings were allocated for it", formatPod(pod))
	}
	return o.UserNamespace, nil
}

// idMappedMounts mirrors applyPlatformSpecificContainerConfig
// (kuberuntime_container_linux.go): in a pod with its own user namespace,
// every mount of a container carries the pod's uid and gid mappings (the
// runtime makes them idmapped mounts).
func idMappedMounts(mounts []*runtimeapi.Mount, ns *runtimeapi.NamespaceOption) {
	u := ns.GetUsernsOptions()
	if u == nil || u.Mode != runtimeapi.NamespaceMode_POD {
		return
	}
	for _, m := range mounts {
		m.UidMappings = u.Uids
		m.GidMappings = u.Gids
	}
}

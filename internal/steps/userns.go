package steps

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/podcfg"
)

// usernsState is what the engine knows of the pod's user namespace
// (hostUsers: false).
type usernsState struct {
	record  *podcfg.UserNamespaceRecord // the pod's mappings, once allocated
	from    string                      // how they were chosen, for the step's details
	written bool                        // the record is in the pod dir
}

// podUserNamespace mirrors UsernsManager.GetOrCreateUserNamespaceMappings
// (pkg/kubelet/userns/userns_manager.go), which generatePodSandboxConfig
// calls through NamespacesForPod (kuberuntime/util/util.go): nil for a pod
// in the node's user namespace; for hostUsers: false, the runtime handler
// must report user namespaces in RuntimeStatus
// (runtime_handlers[].features.user_namespaces, Kubelet.HandlerSupportsUserNamespaces
// in kubelet_getters.go), else the kubelet's refusal; then the pod's
// mappings: those recorded in its pod dir, or a new range.
//
// podstep cannot share a kubelet's allocator. It rebuilds one as the
// kubelet does when it starts (MakeUserNsManager → recordPodMappings): from
// the userns files of the pods under its root dir (podstep's own pods; a
// kubelet's live under another root), and takes the first free range where
// the kubelet takes a random free one (FirstFreeUserNamespace).
func (e *Engine) podUserNamespace() (*runtimeapi.UserNamespace, error) {
	if !podcfg.OwnUserNamespace(e.pod) {
		return nil, nil
	}
	if e.rt.statusSeen {
		h := e.runtimeHandler()
		supports, known := e.rt.handlerUserns[h]
		msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
		if h != "" {
			msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", h)
		}
		switch {
		case len(e.rt.handlerUserns) == 0:
			// An older runtime reports no handlers at all (containerd 1.6).
			return nil, errors.New(msg)
		case !known:
			return nil, fmt.Errorf("%s: the handler %q is not known", msg, h)
		case !supports:
			return nil, errors.New(msg)
		}
	}
	if e.rt.userns.record == nil {
		rec, from, err := e.allocateUserNamespace()
		if err != nil {
			return nil, fmt.Errorf("create user namespace: %w", err)
		}
		e.rt.userns.record, e.rt.userns.from = &rec, from
	}
	return e.rt.userns.record.CRI(), nil
}

// allocateUserNamespace reads this pod's record, else picks the first range
// no pod under the root dir has.
func (e *Engine) allocateUserNamespace() (podcfg.UserNamespaceRecord, string, error) {
	own := filepath.Join(e.rt.podDir, podcfg.UserNamespaceFile)
	if data, err := os.ReadFile(own); err == nil {
		rec, err := podcfg.ParseUserNamespace(data)
		return rec, "recorded in " + own, err
	}
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(e.rt.podDir), "*", podcfg.UserNamespaceFile))
	var used []uint32
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		rec, err := podcfg.ParseUserNamespace(data)
		if err != nil {
			return rec, "", fmt.Errorf("record pod mappings for existing pod: %s: %w", f, err)
		}
		used = append(used, rec.UIDMappings[0].HostID)
	}
	first, err := podcfg.FirstFreeUserNamespace(used)
	if err != nil {
		return podcfg.UserNamespaceRecord{}, "", err
	}
	from := fmt.Sprintf("the first free range of %d IDs from 65536 (%d in use by other pods under %s; a kubelet picks a random free one)",
		podcfg.UserNamespaceIDs, len(used), filepath.Dir(e.rt.podDir))
	return podcfg.NewUserNamespace(first), from, nil
}

// writeUserNamespace records the pod's mappings in its pod dir, as
// createUserNs → writeMappingsToFile does before the sandbox is created;
// teardown removes it with the pod dir (the kubelet releases the range then).
func (e *Engine) writeUserNamespace() ([]Detail, error) {
	u := &e.rt.userns
	if u.record == nil || u.written {
		return nil, nil
	}
	m := u.record.UIDMappings[0]
	path := filepath.Join(e.rt.podDir, podcfg.UserNamespaceFile)
	details := []Detail{
		kv("user namespace", fmt.Sprintf("uids and gids 0-%d in the pod are %d-%d on the host", m.Length-1, m.HostID, uint64(m.HostID)+uint64(m.Length)-1)),
		kv("  range", u.from),
	}
	data, err := json.Marshal(u.record)
	if err != nil {
		return details, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return details, fmt.Errorf("create user namespace: %w", err)
	}
	u.written = true
	return append(details, kv("  recorded in", path)), nil
}

// usernsSupportDetails says, for a pod with hostUsers: false, what the
// runtime reported for its handler: what HandlerSupportsUserNamespaces reads.
func usernsSupportDetails(e *Engine) []Detail {
	if !podcfg.OwnUserNamespace(e.pod) {
		return nil
	}
	h := e.runtimeHandler()
	name := fmt.Sprintf("%q", h)
	supports, known := e.rt.handlerUserns[h]
	switch {
	case len(e.rt.handlerUserns) == 0:
		return []Detail{kv("user namespaces", "not reported: Status lists no runtime handlers (an older runtime), so the kubelet refuses hostUsers: false")}
	case !known:
		return []Detail{kv("user namespaces", "handler "+name+" is not among the runtime's handlers")}
	}
	return []Detail{kv("user namespaces", fmt.Sprintf("handler %s: features.user_namespaces=%t (RuntimeStatus)", name, supports))}
}

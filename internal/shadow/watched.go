package shadow

import (
	"context"
	"fmt"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/mark"
)

// PodUIDLabel is the label the kubelet puts on every sandbox it makes
// (kubelet's kuberuntime labels.go, types.KubernetesPodUIDLabel).
const PodUIDLabel = "io.kubernetes.pod.uid"

// Watch says whether a kubelet uses a runtime, and how podstep knows.
type Watch struct {
	Watched bool
	// Sandboxes is how many of the runtime's sandboxes a kubelet made (its
	// labels, no podstep marker); Example names one (namespace/name).
	Sandboxes int
	Example   string
}

// Why is the reason in words, for the runtime line.
func (w Watch) Why() string {
	if !w.Watched {
		return "no sandbox on it was made by a kubelet"
	}
	return fmt.Sprintf("a kubelet watches it: %d of its sandboxes are a kubelet's (such as %s)", w.Sandboxes, w.Example)
}

// Watched lists the runtime's sandboxes: any with the kubelet's pod UID
// label and without podstep's mark.ManagedLabel is a kubelet's, and that
// kubelet kills sandboxes of pods it does not know (HandlePodCleanups).
func Watched(ctx context.Context, c *cri.Client) (Watch, error) {
	list, err := c.ListPodSandbox(ctx, nil)
	if err != nil {
		return Watch{}, fmt.Errorf("list the runtime's sandboxes: %w", err)
	}
	var w Watch
	for _, sb := range list.GetItems() {
		l := sb.GetLabels()
		if l[PodUIDLabel] == "" || l[mark.ManagedLabel] != "" {
			continue
		}
		if w.Sandboxes == 0 {
			w.Example = sb.GetMetadata().GetNamespace() + "/" + sb.GetMetadata().GetName()
		}
		w.Sandboxes++
	}
	w.Watched = w.Sandboxes > 0
	return w, nil
}

package report

import (
	"strings"
	"testing"

	"github.com/podstep/podstep/internal/cluster"
)

// TestClusterTextContainers: the text report's container lines are
// ContainerStatus.Line's, indented.
func TestClusterTextContainers(t *testing.T) {
	v := &cluster.PodView{Server: "https://127.0.0.1:6443", Pod: "default/app", Phase: "Pending",
		Containers: []cluster.ContainerStatus{{Name: "app", State: "waiting", Reason: "ContainerCreating"}}}
	var b strings.Builder
	WriteClusterText(&b, v)
	if want := "\n  container app: waiting (ContainerCreating), ready false, restarts 0\n"; !strings.Contains(b.String(), want) {
		t.Errorf("no %q in\n%s", want, b.String())
	}
}

package steps

import (
	"github.com/podstep/podstep/internal/node"
	"github.com/podstep/podstep/internal/reason"
	"github.com/podstep/podstep/internal/volume"
)

// Stop is a step a run will fail at, known before any runtime is
// contacted: the pod bound to another node, a volume whose object is
// missing, a claim that is not bound, a CSI driver podstep cannot call.
type Stop struct {
	// Step is the ID of the step that will fail, Name its name.
	Step int    `json:"step"`
	Name string `json:"name"`
	// Reason and Message are the kubelet's, as the step will report them.
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Hint says what to change (the flag or the object to add); "" when
	// there is nothing to suggest.
	Hint string `json:"hint,omitempty"`
}

// Stops lists where a run of the plan will stop, before it runs: the
// admit step's rejection (node.Admit, pure) and the volumes a plugin
// cannot prepare (volume.Host.Prepare, which writes nothing): the same
// checks, in the same order, as the steps make. A plan shows them; the
// run itself makes its checks again.
func (e *Engine) Stops() []Stop {
	var out []Stop
	find := func(k Kind) (int, string) {
		for _, s := range e.steps {
			if s.Kind == k {
				return s.ID, s.Name
			}
		}
		return 0, ""
	}
	if id, name := find(KindAdmit); id != 0 {
		if v := node.Admit(e.pod, e.opts.Node); !v.Admit {
			st := Stop{Step: id, Name: name, Reason: v.Reason, Message: v.Message}
			if v.Reason == reason.NodeName {
				st.Hint = "the pod's spec.nodeName is " + e.pod.Spec.NodeName + ", the node is " + e.opts.Node.Name() + ": give --node the Node " + e.pod.Spec.NodeName + " (kubectl get node " + e.pod.Spec.NodeName + " -o yaml), or leave --node out and this machine plays it"
			}
			return append(out, st) // a rejected pod goes no further
		}
	}
	if id, name := find(KindVolumes); id != 0 {
		vols, _ := usedVolumes(e.pod)
		host := e.volumeHost()
		pod := e.volumePod()
		planned := e.plannedVolumePaths()
		for _, v := range vols {
			if _, err := host.Prepare(pod, v, planned[v.Name]); err != nil {
				out = append(out, Stop{Step: id, Name: name, Reason: reason.FailedMountVolume, Message: err.Error(), Hint: volume.Hint(err)})
			}
		}
	}
	return out
}

package bench

import "github.com/podstep/podstep/internal/steps"

// Phases are the phases bench reports, in the order a pod goes through
// them. A phase is the time of the steps of its kinds, added up per pod.
var Phases = []string{
	"admit", "dirs", "volumes", "pull-secrets", "sandbox", "pull", "create", "start", "post-start",
	"init-wait", "startup", "backoff", "relist", "ready", "teardown",
}

// PhaseOf is the phase a step of kind k counts in.
func PhaseOf(k steps.Kind) string {
	switch k {
	case steps.KindAdmit:
		return "admit"
	case steps.KindDirs:
		return "dirs"
	case steps.KindVolumes:
		return "volumes"
	case steps.KindPullSecrets:
		return "pull-secrets"
	case steps.KindRuntimeStatus, steps.KindRunSandbox, steps.KindSandboxStatus:
		return "sandbox"
	case steps.KindPull:
		return "pull"
	case steps.KindCreate:
		return "create"
	case steps.KindStart:
		return "start"
	case steps.KindPostStart:
		return "post-start"
	case steps.KindWaitInit:
		return "init-wait"
	case steps.KindStartup:
		return "startup"
	case steps.KindBackoff:
		return "backoff"
	case steps.KindRelist:
		return "relist"
	case steps.KindReady:
		return "ready"
	case steps.KindStopContainers, steps.KindStopSandbox, steps.KindRemoveContainers, steps.KindRemoveSandbox, steps.KindRemoveDirs:
		return "teardown"
	}
	return k.String()
}

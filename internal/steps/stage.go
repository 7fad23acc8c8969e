package steps

// Stage is one of the phases of pod creation, in the kubelet's order.
type Stage string

// The stages, in the order the kubelet goes through them.
const (
	StageAdmit       Stage = "admit"
	StageDirs        Stage = "dirs"
	StageVolumes     Stage = "volumes"
	StagePullSecrets Stage = "pull-secrets"
	StageSandbox     Stage = "sandbox"
	StageInit        Stage = "init"
	StageContainers  Stage = "containers"
	StagePostStart   Stage = "post-start"
	// StageReady runs startup and readiness probes until the pod is Ready
	// (optional: Options.WaitReady, `--wait-ready`).
	StageReady Stage = "ready"
	// StageTeardown is podstep's cleanup: what the kubelet does when the pod is deleted.
	StageTeardown Stage = "teardown"
)

// Stages lists the creation stages in order (teardown excluded).
var Stages = []Stage{StageAdmit, StageDirs, StageVolumes, StagePullSecrets, StageSandbox, StageInit, StageContainers, StagePostStart, StageReady}

// ParseStage returns the stage named s.
func ParseStage(s string) (Stage, bool) {
	for _, st := range append(Stages, StageTeardown) {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// State is where a step is in its life.
type State string

// Step states.
const (
	Pending State = "pending"
	Running State = "running"
	Done    State = "done"
	Failed  State = "failed"
	Skipped State = "skipped"
)

// Ended counts the steps of list that ran to their end (done or failed;
// not pending, running, or skipped after the pod failed): the one step
// counter of every frontend, the TUI's plan pane ("plan 22/31") and the
// live page's ("Steps 22 / 31": live.js drawSteps counts the same, the
// steps a step event ended).
func Ended(list []Step) int {
	n := 0
	for _, s := range list {
		if s.State == Done || s.State == Failed {
			n++
		}
	}
	return n
}

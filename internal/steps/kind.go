package steps

import (
	"path"
	"strings"
	"time"
)

// Kind says what a step does; steps of one kind run the same action (for
// different containers, or again after a restart). Code that treats steps
// differently tests the Kind, never the step's name.
type Kind int

// The step kinds, in plan order. A kind's String is the step's name, or its
// prefix followed by "/<container>" for the per-container kinds.
const (
	KindAdmit            Kind = iota + 1 // admit the pod to the node
	KindDirs                             // make the pod's data directories
	KindVolumes                          // set up the volumes
	KindPullSecrets                      // resolve the image pull secrets
	KindRuntimeStatus                    // check the runtime is ready
	KindRunSandbox                       // RunPodSandbox
	KindSandboxStatus                    // read the sandbox's IPs
	KindImageVolumes                     // ensure the images of image volumes
	KindBackoff                          // check a restart's back-off
	KindPull                             // ensure a container's image
	KindCreate                           // CreateContainer
	KindStart                            // StartContainer
	KindPostStart                        // run a postStart hook
	KindWaitInit                         // wait for an init container to exit
	KindStartup                          // wait for a sidecar's startup probe
	KindRelist                           // watch the containers, as the PLEG does
	KindReady                            // probe until the pod is Ready
	KindStopContainers                   // teardown: StopContainer each
	KindStopSandbox                      // teardown: StopPodSandbox
	KindRemoveContainers                 // teardown: RemoveContainer each
	KindRemoveSandbox                    // teardown: RemovePodSandbox
	KindRemoveDirs                       // teardown: remove the pod's directories
	KindReset                            // RestartAllContainers: kill and remove every container
)

var kindNames = [...]string{
	KindAdmit:            "admit",
	KindDirs:             "dirs",
	KindVolumes:          "volumes",
	KindPullSecrets:      "pull-secrets",
	KindRuntimeStatus:    "runtime-status",
	KindRunSandbox:       "run-sandbox",
	KindSandboxStatus:    "sandbox-status",
	KindImageVolumes:     "image-volumes",
	KindBackoff:          "backoff",
	KindPull:             "pull",
	KindCreate:           "create",
	KindStart:            "start",
	KindPostStart:        "post-start",
	KindWaitInit:         "wait",
	KindStartup:          "startup",
	KindRelist:           "relist",
	KindReady:            "ready",
	KindStopContainers:   "stop-containers",
	KindStopSandbox:      "stop-sandbox",
	KindRemoveContainers: "remove-containers",
	KindRemoveSandbox:    "remove-sandbox",
	KindRemoveDirs:       "remove-dirs",
	KindReset:            "reset",
}

// String is the kind's name: "pull", "run-sandbox", ...
func (k Kind) String() string {
	if k <= 0 || int(k) >= len(kindNames) {
		return ""
	}
	return kindNames[k]
}

// PerContainer reports whether steps of this kind are about one container
// (named "<kind>/<container>").
func (k Kind) PerContainer() bool {
	switch k {
	case KindBackoff, KindPull, KindCreate, KindStart, KindPostStart, KindWaitInit, KindStartup:
		return true
	}
	return false
}

// Waits reports whether a step of this kind mostly waits on purpose (for an
// exit, a back-off or a probe) rather than working: its time outside CRI
// calls is waiting, not overhead.
func (k Kind) Waits() bool {
	switch k {
	case KindWaitInit, KindBackoff, KindStartup, KindRelist, KindReady:
		return true
	}
	return false
}

// Split is the one rule that splits a step's time: the time in its CRI
// calls (inCalls) is the runtime's; the rest is waiting when the kind Waits,
// else podstep's own. dur shorter than inCalls (a step still running) counts
// no rest. Every frontend's split (run's summary, bench, the TUI's and the
// HTML timeline) comes from here.
func (k Kind) Split(dur, inCalls time.Duration) (runtime, wait, own time.Duration) {
	rest := max(0, dur-inCalls)
	if k.Waits() {
		return inCalls, rest, 0
	}
	return inCalls, 0, rest
}

// KindOf is the kind of the step named name ("create/app": KindCreate), 0
// for a name no kind makes: what a recording, which stores names, needs
// to test kinds (internal/replay).
func KindOf(name string) Kind {
	prefix, _, _ := strings.Cut(name, "/")
	for k, n := range kindNames {
		if n != "" && n == prefix {
			return Kind(k)
		}
	}
	return 0
}

// stepName is the name of the step of this kind for container ("" for the
// pod-wide kinds): "pull/app", "relist".
func (k Kind) stepName(container string) string {
	if k.PerContainer() {
		return k.String() + "/" + container
	}
	return k.String()
}

// Each action's kind.
func (admitStep) kind() Kind            { return KindAdmit }
func (dirsStep) kind() Kind             { return KindDirs }
func (volumesStep) kind() Kind          { return KindVolumes }
func (pullSecretsStep) kind() Kind      { return KindPullSecrets }
func (runtimeStatusStep) kind() Kind    { return KindRuntimeStatus }
func (runSandboxStep) kind() Kind       { return KindRunSandbox }
func (sandboxStatusStep) kind() Kind    { return KindSandboxStatus }
func (imageVolumesStep) kind() Kind     { return KindImageVolumes }
func (backoffStep) kind() Kind          { return KindBackoff }
func (pullStep) kind() Kind             { return KindPull }
func (createStep) kind() Kind           { return KindCreate }
func (startStep) kind() Kind            { return KindStart }
func (postStartStep) kind() Kind        { return KindPostStart }
func (waitInitStep) kind() Kind         { return KindWaitInit }
func (startupStep) kind() Kind          { return KindStartup }
func (relistStep) kind() Kind           { return KindRelist }
func (readyStep) kind() Kind            { return KindReady }
func (stopContainersStep) kind() Kind   { return KindStopContainers }
func (stopSandboxStep) kind() Kind      { return KindStopSandbox }
func (removeContainersStep) kind() Kind { return KindRemoveContainers }
func (removeSandboxStep) kind() Kind    { return KindRemoveSandbox }
func (removeDirsStep) kind() Kind       { return KindRemoveDirs }
func (resetStep) kind() Kind            { return KindReset }

// kindActions are an action of each kind, for what every action of a kind
// shares (Mirrors).
var kindActions = map[Kind]action{
	KindAdmit:            admitStep{},
	KindDirs:             dirsStep{},
	KindVolumes:          volumesStep{},
	KindPullSecrets:      pullSecretsStep{},
	KindRuntimeStatus:    runtimeStatusStep{},
	KindRunSandbox:       runSandboxStep{},
	KindSandboxStatus:    sandboxStatusStep{},
	KindImageVolumes:     imageVolumesStep{},
	KindBackoff:          backoffStep{},
	KindPull:             pullStep{},
	KindCreate:           createStep{},
	KindStart:            startStep{},
	KindPostStart:        postStartStep{},
	KindWaitInit:         waitInitStep{},
	KindStartup:          startupStep{},
	KindRelist:           relistStep{},
	KindReady:            readyStep{},
	KindStopContainers:   stopContainersStep{},
	KindStopSandbox:      stopSandboxStep{},
	KindRemoveContainers: removeContainersStep{},
	KindRemoveSandbox:    removeSandboxStep{},
	KindRemoveDirs:       removeDirsStep{},
	KindReset:            resetStep{},
}

// Mirrors is the one statement of which kubelet v1.37 code a step of this
// kind mirrors ("" for 0): the plan's, the TUI's, a recording's and podstep
// proxy's (internal/watch) all come from the actions' mirrors().
func (k Kind) Mirrors() string {
	if a, ok := kindActions[k]; ok {
		return a.mirrors()
	}
	return ""
}

// Kinds are the step kinds, in plan order (for completion of step names).
func Kinds() []Kind {
	out := make([]Kind, 0, len(kindNames)-1)
	for k := KindAdmit; int(k) < len(kindNames); k++ {
		out = append(out, k)
	}
	return out
}

// MatchName reports whether the step named name matches pattern, a step
// name whose container part may be a glob (path.Match: create/*, start/a*);
// a per-container kind alone ("pull") matches each container's step.
func MatchName(pattern, name string) bool {
	if !strings.Contains(pattern, "/") {
		if k := KindOf(pattern); k != 0 && k.PerContainer() {
			return KindOf(name) == k && strings.HasPrefix(name, pattern+"/")
		}
		return pattern == name
	}
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

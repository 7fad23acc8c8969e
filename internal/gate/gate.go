package gate

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Name is a feature gate's name, as the kubelet spells it.
type Name string

// The gates podstep honours, each with its v1.37 stage and default.
const (
	// ContainerRestartRules (beta, on since v1.35): restartPolicy and
	// restartPolicyRules on regular containers, and restartPolicy other than
	// Always on init containers (KEP-5307). Off: the API server drops the
	// fields (dropContainerRestartRules), so podstep restarts by the pod's
	// restartPolicy alone and says the container's fields were ignored.
	ContainerRestartRules Name = "ContainerRestartRules"
	// RestartAllContainersOnContainerExits (beta, on since v1.36): the
	// RestartAllContainers rule action and the AllContainersRestarting
	// condition. Off: a matching RestartAllContainers rule falls back to the
	// container's restartPolicy (ContainerShouldRestart).
	RestartAllContainersOnContainerExits Name = "RestartAllContainersOnContainerExits"
	// ContainerStopSignals (alpha, off in v1.37): lifecycle.stopSignal sent
	// in ContainerConfig.stop_signal (KEP-4960). Off (the default): the API
	// server drops the field, the kubelet sends no stop signal, and podstep
	// says so in the create step.
	ContainerStopSignals Name = "ContainerStopSignals"
	// PodLevelResources (beta, on since v1.34): spec.resources (KEP-2837)
	// in admission, QoS, the sandbox's resources and the containers'
	// default limits. Off: the API server drops spec.resources; podstep
	// then ignores it and says so in the admit step.
	PodLevelResources Name = "PodLevelResources"
	// SupplementalGroupsPolicy (GA and locked on in v1.37).
	SupplementalGroupsPolicy Name = "SupplementalGroupsPolicy"
	// ProcMountType (GA and locked on in v1.37).
	ProcMountType Name = "ProcMountType"
)

// info is a gate's v1.37 state.
type info struct {
	stage  string
	def    bool
	locked bool
}

var known = map[Name]info{
	ContainerRestartRules:                {stage: "beta", def: true},
	RestartAllContainersOnContainerExits: {stage: "beta", def: true},
	ContainerStopSignals:                 {stage: "alpha", def: false},
	PodLevelResources:                    {stage: "beta", def: true},
	SupplementalGroupsPolicy:             {stage: "GA", def: true, locked: true},
	ProcMountType:                        {stage: "GA", def: true, locked: true},
}

// Gates are the feature gates in effect: v1.37's defaults with what
// --feature-gates changed. The zero value is the defaults.
type Gates struct {
	set map[Name]bool
}

// Enabled says whether gate n is on.
func (g Gates) Enabled(n Name) bool {
	if v, ok := g.set[n]; ok {
		return v
	}
	return known[n].def
}

// Describe is "ContainerStopSignals (alpha, off by default in v1.37)" or,
// when --feature-gates changed it, "... (alpha, set on by --feature-gates)".
func (g Gates) Describe(n Name) string {
	i := known[n]
	if v, ok := g.set[n]; ok {
		return fmt.Sprintf("%s (%s, set %s by --feature-gates)", n, i.stage, onOff(v))
	}
	return fmt.Sprintf("%s (%s, %s by default in v1.37)", n, i.stage, onOff(i.def))
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Parse reads the kubelet's --feature-gates value: comma-separated
// Name=true|false pairs. An unknown gate, a bad value or a locked gate set
// against its default is an error.
func Parse(s string) (Gates, error) {
	g := Gates{set: map[Name]bool{}}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Gates{}, fmt.Errorf("%q: expected Name=true or Name=false", kv)
		}
		n := Name(strings.TrimSpace(k))
		i, found := known[n]
		if !found {
			return Gates{}, fmt.Errorf("unknown feature gate %q: podstep knows %s", n, strings.Join(Names(), ", "))
		}
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return Gates{}, fmt.Errorf("%s=%s: expected true or false", n, v)
		}
		if i.locked && b != i.def {
			return Gates{}, fmt.Errorf("cannot set feature gate %s to %v, feature is locked to %v", n, b, i.def)
		}
		g.set[n] = b
	}
	return g, nil
}

// Names lists the known gates, sorted.
func Names() []string {
	var out []string
	for _, n := range slices.Sorted(maps.Keys(known)) {
		out = append(out, string(n))
	}
	return out
}

// String is the --feature-gates form of what was set ("" for the defaults).
func (g Gates) String() string {
	var parts []string
	for _, n := range slices.Sorted(maps.Keys(g.set)) {
		parts = append(parts, fmt.Sprintf("%s=%v", n, g.set[n]))
	}
	return strings.Join(parts, ",")
}

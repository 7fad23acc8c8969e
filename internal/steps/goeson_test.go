package steps

import (
	"fmt"
	"strings"
	"testing"
)

// goesOnPod has an optional sidecar and init container and two
// containers; %s is the annotations, %s the init containers.
const goesOnPod = `apiVersion: v1
kind: Pod
metadata:
  name: goeson
  annotations:
    %s
spec:
  initContainers:
%s
  containers:
  - {name: first, image: docker.io/library/busybox:1.35, command: ["sleep", "3600"]}
  - {name: second, image: docker.io/library/busybox:1.35, command: ["sleep", "3600"]}
`

const (
	sidecarInit = `  - {name: side, image: docker.io/library/busybox:1.35, command: ["sleep", "3600"], restartPolicy: Always}
  - {name: setup, image: docker.io/library/busybox:1.35, command: ["true"]}`
	plainInit = `  - {name: setup, image: docker.io/library/busybox:1.35, command: ["true"]}`
)

// TestStartLoopGoesOn: a container whose start fails (its image, create,
// start or postStart hook) does not stop the others, as SyncPod's start
// loop ignores a regular container's error and skips a sidecar's; an init
// container's failure aborts the sync. The run fails at the first failure
// once the loop is over, and Retry starts only what failed again.
func TestStartLoopGoesOn(t *testing.T) {
	cases := []struct {
		name, annotation, inits string
		failed                  string   // the run's failed step
		done                    []string // steps done after it
		skipped                 []string // steps skipped
	}{
		{"a container's create", `sim.podstep.dev/create-error.first: "bad mount"`, plainInit, "create/first",
			[]string{"pull/second", "create/second", "start/second"}, []string{"start/first"}},
		{"a container's start", `sim.podstep.dev/start-error.first: "exec: not found"`, plainInit, "start/first",
			[]string{"pull/second", "create/second", "start/second"}, nil},
		{"a container's image", `sim.podstep.dev/pull-error: "docker.io/library/nginx:1=401 Unauthorized"`, plainInit, "pull/first",
			[]string{"pull/second", "create/second", "start/second"}, []string{"create/first", "start/first"}},
		{"the last container's create", `sim.podstep.dev/create-error.second: "bad mount"`, plainInit, "create/second",
			nil, []string{"start/second"}},
		{"a sidecar's create", `sim.podstep.dev/create-error.side: "bad mount"`, sidecarInit, "create/side",
			[]string{"pull/setup", "start/setup", "wait/setup", "start/first", "start/second"}, []string{"start/side"}},
		{"an init container's create", `sim.podstep.dev/create-error.setup: "bad mount"`, plainInit, "create/setup",
			nil, []string{"start/setup", "pull/first", "start/first", "start/second"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			y := fmt.Sprintf(goesOnPod, tc.annotation, tc.inits)
			if strings.Contains(tc.annotation, "nginx") {
				y = strings.Replace(y, "{name: first, image: docker.io/library/busybox:1.35", "{name: first, image: docker.io/library/nginx:1", 1)
			}
			c := newSim(t)
			e := runAll(t, parse(t, y), c, testOptions(t))
			defer teardown(t, e)
			f, failed := e.Failed()
			if !failed || f.Name != tc.failed {
				t.Fatalf("failed %v at %q, want %s\n%s", failed, f.Name, tc.failed, stepStates(e))
			}
			states := map[string]State{}
			for _, s := range e.Steps() {
				states[s.Name] = s.State
			}
			for _, n := range tc.done {
				if states[n] != Done {
					t.Errorf("%s is %s, want done\n%s", n, states[n], stepStates(e))
				}
			}
			for _, n := range tc.skipped {
				if states[n] != Skipped {
					t.Errorf("%s is %s, want skipped\n%s", n, states[n], stepStates(e))
				}
			}
		})
	}
}

// TestRetryAfterGoingOn: Retry after a container's failure the kubelet
// went on from starts that container again and leaves the one started.
func TestRetryAfterGoingOn(t *testing.T) {
	c := newSim(t)
	e := runAll(t, parse(t, fmt.Sprintf(goesOnPod, `sim.podstep.dev/start-error.first: "exec: not found"`, plainInit)), c, testOptions(t))
	defer teardown(t, e)
	if f, failed := e.Failed(); !failed || f.Name != "start/first" {
		t.Fatalf("failed %v at %q, want start/first", failed, f.Name)
	}
	if err := e.Retry(); err != nil {
		t.Fatal(err)
	}
	if next, _ := e.NextStep(); next.Name != "pull/first" {
		t.Fatalf("after Retry the next step is %s, want pull/first", next.Name)
	}
	for _, s := range e.Steps() {
		if s.Container == "second" && s.State != Done {
			t.Errorf("%s is %s after Retry, want done (the kubelet's next sync leaves a running container)", s.Name, s.State)
		}
	}
}

// stepStates is every step's name and state, for failure messages.
func stepStates(e *Engine) string {
	var b strings.Builder
	for _, s := range e.Steps() {
		fmt.Fprintf(&b, "  %s %s\n", s.Name, s.State)
	}
	return b.String()
}

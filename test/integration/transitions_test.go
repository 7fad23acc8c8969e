//go:build integration

package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// stepChanges is what a JSON step object says the step changed and recorded.
type stepChanges struct {
	Type    string       `json:"type"`
	Name    string       `json:"name"`
	Changes []transition `json:"changes"`
	Events  []struct {
		Type    string `json:"type"`
		Reason  string `json:"reason"`
		Object  string `json:"object"`
		Message string `json:"message"`
	} `json:"events"`
}

// transition is one change of a JSON step object.
type transition struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// stepTransition is a change a step must report in JSON.
type stepTransition struct {
	step string
	transition
}

// TestTransitionsOnContainerd: on the real containerd, a run's --auto text
// shows under each step what it changed in the pod and the kubelet events
// it recorded, and its JSON step objects carry the same as changes and
// events: the hello pod (Pulled, Created, Started, ContainerCreating →
// Running, Killing at teardown), the init pod (Initialized False → True)
// and a postStart hook that fails (FailedPostStartHook, Killing).
func TestTransitionsOnContainerd(t *testing.T) {
	e := setup(t)
	scenario := func(name string) string { return filepath.Join(e.repo, "internal", "scenario", "data", name+".yaml") }
	// The pods are renamed transitions-<name>, so that other runs on a
	// shared runtime (the same manifests, kept or running) do not collide.
	cases := []struct {
		name, file string // the pod's name in the manifest, and the manifest
		code       int
		extra      []string
		text       []string // regular expressions the text must match, each on one line; POD is pod/<the pod's name>
		changes    []stepTransition
		events     map[string][]string // step → the reasons it must list, in order (others may come between)
	}{
		{
			name: "hello", file: e.pod("hello"),
			text: []string{
				`^       pod: STATUS Pending → ContainerCreating · host IP \S+$`,
				`^       pod: IP \S+ · PodReadyToStartContainers False → True$`,
				`^       Normal +Pulled +POD +Container image "docker.io/library/busybox:1.35" already present on machine$`,
				`^       Normal +Created +POD +Created container: hello$`,
				`^       pod: STATUS ContainerCreating → Running · READY 0/1 → 1/1 · phase Pending → Running · Ready False → True · ContainersReady False → True · hello: waiting ContainerCreating → running, ready, started$`,
				`^       Normal +Started +POD +Started container hello$`,
				`^       Normal +Killing +POD +Stopping container hello$`,
			},
			changes: []stepTransition{
				{"admit", transition{"status", "Pending", "ContainerCreating"}},
				{"start/hello", transition{"status", "ContainerCreating", "Running"}},
				{"start/hello", transition{"status.containerStatuses[hello].state", "waiting ContainerCreating", "running"}},
				{"sandbox-status", transition{"status.conditions[PodReadyToStartContainers].status", "False", "True"}},
			},
			events: map[string][]string{"pull/hello": {"Pulled"}, "create/hello": {"Created"}, "start/hello": {"Started"}, "stop-containers": {"Killing"}},
		},
		{
			name: "init-demo", file: e.pod("init"),
			text: []string{
				`^       pod: setup: waiting PodInitializing → running, started$`,
				`^       pod: STATUS Init:0/1 → PodInitializing · Initialized False → True · setup: running → terminated Completed \(exit 0\), ready, not started$`,
				`^       pod: STATUS PodInitializing → Running · `,
			},
			changes: []stepTransition{
				{"wait/setup", transition{"status.conditions[Initialized].status", "False", "True"}},
				{"wait/setup", transition{"status.initContainerStatuses[setup].state", "running", "terminated Completed (exit 0)"}},
			},
			events: map[string][]string{"start/setup": {"Started"}, "start/app": {"Started"}},
		},
		{
			name: "poststart-fails", file: scenario("poststart-fails"), code: 1, extra: []string{"--max-restarts", "0"},
			text: []string{
				`^       pod: STATUS Running → PostStartHookError · READY 1/1 → 0/1 · Ready True → False · ContainersReady True → False · app: running → waiting PostStartHookError, not ready, not started$`,
				`^       Warning +FailedPostStartHook +POD +PostStartHook failed$`,
				`^       Normal +Killing +POD +FailedPostStartHook$`,
			},
			changes: []stepTransition{
				{"post-start/app", transition{"status", "Running", "PostStartHookError"}},
				{"post-start/app", transition{"status.containerStatuses[app].state", "running", "waiting PostStartHookError"}},
			},
			events: map[string][]string{"post-start/app": {"FailedPostStartHook", "Killing"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "transitions-" + tc.name
			file := renamed(t, tc.file, tc.name, name)
			base := []string{"run", "--auto", "-f", file, "-r", e.endpoint, "--grace-period", "0"}
			t.Run("text", func(t *testing.T) {
				d := newDirs(t)
				r := e.podstep(t, append(append(base, "--root-dir", d.root, "--log-dir", d.logs), tc.extra...)...)
				if r.code != tc.code {
					t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r)
				}
				if strings.Contains(r.stdout, "SIMULATED") {
					t.Fatalf("ran on the simulated runtime\n%s", r)
				}
				for _, re := range tc.text {
					re = strings.ReplaceAll(re, "POD", regexp.QuoteMeta("pod/"+name))
					if !regexp.MustCompile("(?m)" + re).MatchString(r.stdout) {
						t.Errorf("no line matches %s\n%s", re, r)
					}
				}
				assertPodGone(t, e, d, name, "")
			})
			t.Run("json", func(t *testing.T) {
				d := newDirs(t)
				r := e.run(t, d, file, tc.extra...)
				if r.code != tc.code {
					t.Fatalf("exit %d, want %d\n%s", r.code, tc.code, r)
				}
				steps := stepsChanges(t, r.stdout)
				for _, w := range tc.changes {
					if !slices.ContainsFunc(steps, func(s stepChanges) bool {
						return s.Name == w.step && slices.Contains(s.Changes, w.transition)
					}) {
						t.Errorf("no %s step has the change %+v\n%s", w.step, w.transition, r)
					}
				}
				for step, want := range tc.events {
					i := slices.IndexFunc(steps, func(s stepChanges) bool { return s.Name == step })
					if i < 0 {
						t.Errorf("no %s step\n%s", step, r)
						continue
					}
					var got []string
					for _, ev := range steps[i].Events {
						got = append(got, ev.Reason)
					}
					if !isSubsequence(want, got) {
						t.Errorf("step %s: events %v, want %v among them, in order", step, got, want)
					}
				}
				assertPodGone(t, e, d, name, r.summary.UID)
			})
		})
	}
}

// renamed writes a copy of the manifest file with the pod named to instead
// of from, and returns its path.
func renamed(t *testing.T, file, from, to string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	meta := "\nmetadata:\n  name: "
	if !strings.Contains(string(data), meta+from+"\n") {
		t.Fatalf("%s: no %q in its metadata", file, "name: "+from)
	}
	out := filepath.Join(t.TempDir(), to+".yaml")
	if err := os.WriteFile(out, []byte(strings.Replace(string(data), meta+from+"\n", meta+to+"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// assertPodGone checks the runtime holds no sandbox or container of the pod
// named name, nor the disk its dirs (those of uid, when known): other pods
// on a shared runtime are not this test's business.
func assertPodGone(t *testing.T, e *env, d dirs, name, uid string) {
	t.Helper()
	c := dialCRI(t, e.endpoint)
	for _, sb := range c.managedSandboxes(t) {
		if sb.Metadata.Name == name {
			t.Errorf("sandbox %s of pod %s left after the run (%s)", sb.Id[:13], name, sb.State)
		}
	}
	assertEmptyDir(t, "pod dirs", filepath.Join(d.root, "pods"))
	if uid != "" {
		assertGone(t, "pod log dir", d.podLogDir("default", name, uid))
	}
}

// stepsChanges reads the step objects of -o json output; every one has
// changes and events arrays, empty ones included.
func stepsChanges(t *testing.T, stdout string) []stepChanges {
	t.Helper()
	var out []stepChanges
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("JSON line: %v", err)
		}
		var typ string
		if err := json.Unmarshal(raw["type"], &typ); err != nil || typ != "step" {
			continue
		}
		for _, k := range []string{"changes", "events"} {
			if v := strings.TrimSpace(string(raw[k])); !strings.HasPrefix(v, "[") {
				t.Errorf("a step object's %q is %q, want an array: %.200s", k, v, sc.Text())
			}
		}
		var s stepChanges
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("step line: %v", err)
		}
		out = append(out, s)
	}
	return out
}

// isSubsequence says whether want appears in got in order, maybe with
// other items between.
func isSubsequence(want, got []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeManifest writes a pod manifest into a temp file.
func writeManifest(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// stopSignalPod traps USR1 and TERM and writes the one it got into the
// hostPath dir out, then exits 0.
func stopSignalPod(name, out string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  os: {name: linux}
  terminationGracePeriodSeconds: 10
  volumes:
  - name: out
    hostPath: {path: %s, type: Directory}
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sh", "-c", "trap 'echo USR1 > /out/signal; exit 0' USR1; trap 'echo TERM > /out/signal; exit 0' TERM; echo ready > /out/ready; while true; do sleep 0.1; done"]
    volumeMounts:
    - {name: out, mountPath: /out}
    lifecycle:
      stopSignal: SIGUSR1
`, name, out)
}

// TestStopSignalOnContainerd runs a pod whose container asks for SIGUSR1 as
// its stop signal (KEP-4960) and reads, after teardown, which signal the
// process got. With --feature-gates ContainerStopSignals=true the kubelet
// sends stop_signal SIGNAL_SIGUSR1 in CreateContainer on every runtime;
// containerd 2.x honours it (USR1, and ContainerStatus reports it), while
// containerd 1.6 ignores the field and sends SIGTERM. With the gate off (v1.37's
// default) nothing is sent, the create step says so, and the process gets
// SIGTERM everywhere.
func TestStopSignalOnContainerd(t *testing.T) {
	e := setup(t)
	for _, tc := range []struct {
		name  string
		gates []string
		want  string
	}{
		{name: "gate-on", gates: []string{"--feature-gates", "ContainerStopSignals=true"}, want: map[bool]string{true: "USR1", false: "TERM"}[e.rt.major >= 2]},
		{name: "gate-off", want: "TERM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			f := writeManifest(t, stopSignalPod("stop-signal-"+tc.name, out))
			d := newDirs(t)
			extra := append([]string{"--grace-period", "10"}, tc.gates...)
			r := e.mustRun(t, d, f, extra...)
			create := r.step("create/app")
			if create == nil || len(create.Calls) == 0 {
				t.Fatalf("no create/app step with calls\n%s", r)
			}
			var req string
			for _, c := range create.Calls {
				if c.Method == "CreateContainer" {
					req = string(c.Request)
				}
			}
			sent := strings.Contains(req, `"stop_signal":"SIGNAL_SIGUSR1"`)
			if gateOn := tc.gates != nil; sent != gateOn {
				t.Errorf("CreateContainer stop_signal SIGNAL_SIGUSR1 sent = %v, want %v:\n%s", sent, gateOn, req)
			}
			if tc.gates == nil && !strings.Contains(strings.Join(createWarnings(r), "\n"), "lifecycle.stopSignal SIGUSR1 not sent: feature gate ContainerStopSignals (alpha, off by default in v1.37)") {
				t.Errorf("the create step does not say the stop signal was not sent\n%s", r.stdout)
			}
			// What the runtime reports back (ContainerStatus.stop_signal): 2.x
			// the effective signal, 1.6 nothing.
			if tc.gates != nil {
				t.Logf("runtime under test: %s: ContainerStatus reports stop_signal SIGUSR1: %v", e.rt, containerStatusReports(r, "SIGNAL_SIGUSR1"))
				if e.rt.major >= 2 && !containerStatusReports(r, "SIGNAL_SIGUSR1") {
					t.Errorf("containerd 2.x should report stop_signal SIGNAL_SIGUSR1 in ContainerStatus")
				}
				var shown string
				for _, s := range r.steps {
					if s.Pod != nil {
						for _, cs := range s.Pod.Status.ContainerStatuses {
							if cs.StopSignal != nil {
								shown = string(*cs.StopSignal)
							}
						}
					}
				}
				if want := map[bool]string{true: "SIGUSR1", false: ""}[e.rt.major >= 2]; shown != want {
					t.Errorf("pod status containerStatuses[app].stopSignal = %q, want %q (what the runtime reports)", shown, want)
				}
				if e.rt.major == 1 && containerStatusReports(r, "SIGNAL_SIGUSR1") {
					t.Errorf("containerd 1.6 reported a stop signal it does not know")
				}
			}
			got, err := os.ReadFile(filepath.Join(out, "signal"))
			if err != nil {
				t.Fatalf("the container recorded no signal (teardown with --grace-period 10): %v\n%s", err, r)
			}
			if s := strings.TrimSpace(string(got)); s != tc.want {
				t.Errorf("the process got SIG%s, want SIG%s on %s", s, tc.want, e.rt)
			}
			t.Logf("runtime under test: %s: %s: the process got SIG%s", e.rt, tc.name, strings.TrimSpace(string(got)))
			if td := r.step("stop-containers"); tc.gates != nil && (td == nil || !hasDetail(td, "app stop signal", "SIGUSR1")) {
				t.Errorf("stop-containers does not name the stop signal\n%s", r)
			}
		})
	}
}

func createWarnings(r *result) []string {
	var out []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, `"name":"create/app"`) {
			out = append(out, line)
		}
	}
	return out
}

// containerStatusReports says whether some ContainerStatus response of the
// run names the stop signal sig.
func containerStatusReports(r *result, sig string) bool {
	for _, s := range r.steps {
		for _, c := range s.Calls {
			if c.Method == "ContainerStatus" && strings.Contains(string(c.Response), `"stop_signal":"`+sig+`"`) {
				return true
			}
		}
	}
	return false
}

func hasDetail(s *stepEvent, key, part string) bool {
	for _, d := range s.Details {
		if d.Key == key && strings.Contains(d.Value, part) {
			return true
		}
	}
	return false
}

// TestSupplementalGroupsPolicyOnContainerd runs the Strict scenario and
// checks the runtime-features path: the admit step asks Status and reads
// features.supplemental_groups_policy. containerd 2.x says true: the pod
// runs, and the container's status shows the user the runtime reports
// (uid 1000, gid 1000, groups 1000 and 4000 only). containerd 1.6 answers
// no features: the pod is rejected as the kubelet rejects it
// (SupplementalGroupsPolicyNotSupported), nothing but Status sent. Merge
// is admitted on both.
func TestSupplementalGroupsPolicyOnContainerd(t *testing.T) {
	e := setup(t)
	t.Run("strict", func(t *testing.T) {
		d := newDirs(t)
		r := e.run(t, d, filepath.Join(e.repo, "internal", "scenario", "data", "supplemental-groups-strict.yaml"))
		admit := r.step("admit")
		if admit == nil || len(admit.Calls) != 1 || admit.Calls[0].Method != "Status" {
			t.Fatalf("admit should send exactly one Status call\n%s", r)
		}
		if e.rt.major == 1 {
			t.Logf("runtime under test: %s: no runtime features: refused as the kubelet refuses", e.rt)
			if r.code != 1 || r.summary.Failure == nil || r.summary.Failure.Reason != "SupplementalGroupsPolicyNotSupported" {
				t.Fatalf("want exit 1, SupplementalGroupsPolicyNotSupported\n%s", r)
			}
			if !hasDetail(admit, "runtime features", "answers no features") {
				t.Errorf("admit does not say the runtime has no features: %+v", admit.Details)
			}
			if n := len(r.steps); n == 0 || callsOutside(r, "admit") != 0 {
				t.Errorf("a rejected pod sent CRI calls besides admit's Status")
			}
			return
		}
		t.Logf("runtime under test: %s: features.supplemental_groups_policy true: the pod runs", e.rt)
		if r.code != 0 {
			t.Fatalf("want exit 0\n%s", r)
		}
		if !hasDetail(admit, "runtime features", "supplemental_groups_policy = true") {
			t.Errorf("admit does not name the runtime's feature: %+v", admit.Details)
		}
		var user string
		for _, s := range r.steps {
			if s.Pod != nil {
				for _, cs := range s.Pod.Status.ContainerStatuses {
					if cs.User != nil && cs.User.Linux != nil {
						user = fmt.Sprintf("uid %d gid %d groups %v", cs.User.Linux.UID, cs.User.Linux.GID, cs.User.Linux.SupplementalGroups)
					}
				}
			}
		}
		if user != "uid 1000 gid 1000 groups [1000 4000]" {
			t.Errorf("containerStatuses[app].user = %q, want uid 1000 gid 1000 groups [1000 4000] (Strict: no groups from /etc/group)\n%s", user, r)
		}
	})
	t.Run("merge", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(e.repo, "internal", "scenario", "data", "supplemental-groups-strict.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		f := writeManifest(t, strings.NewReplacer("supplementalGroupsPolicy: Strict", "supplementalGroupsPolicy: Merge", "name: supplemental-groups-strict", "name: supplemental-groups-merge").Replace(string(data)))
		r := e.mustRun(t, newDirs(t), f)
		t.Logf("runtime under test: %s: Merge is admitted (%s)", e.rt, r.summary.Display)
	})
}

// callsOutside counts the CRI calls of steps other than name.
func callsOutside(r *result, name string) int {
	n := 0
	for _, s := range r.steps {
		if s.Name != name {
			n += len(s.Calls)
		}
	}
	return n
}

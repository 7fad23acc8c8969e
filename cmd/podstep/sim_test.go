package main

import (
	"strings"
	"testing"
)

// TestSimulatedRuntimeServesHooks: run tells the engine when it runs on
// the built-in simulated runtime, so the engine tells the simulator the
// port a hook aimed at the pod IP reaches: the hook is sent to the
// simulator's listener at the pod's loopback IP, and the verdict says what
// it rests on.
func TestSimulatedRuntimeServesHooks(t *testing.T) {
	root, logs := dirs(t)
	f := writeTemp(t, "hook.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: hook
spec:
  containers:
  - name: app
    image: docker.io/library/busybox:1.35
    command: ["sleep", "3600"]
    lifecycle:
      postStart:
        httpGet:
          port: 8080
`)
	code, out, errOut := run(t, "run", "--auto", "--sim", "--no-color", "--settle", "0", "--grace-period", "0", "-f", f, "--root-dir", root, "--log-dir", logs)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"postStart hook succeeded",
		"handler: http://127.",
		"status: 200",
		"app: postStart: assumed: the program serves port 8080, which its postStart names but its containerPorts do not declare, and answers GET with 200: the simulator's listener on 127.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in the output:\n%s", want, out)
		}
	}
}

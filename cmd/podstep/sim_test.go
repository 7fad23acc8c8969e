package main

import (
	"strings"
	"testing"
)

// TestSimulatedRuntimeNotProbed: run tells the engine when it runs on the
// built-in simulated runtime, so a hook aimed at the pod IP (which leads
// nowhere, or to someone else's pod) is not sent.
func TestSimulatedRuntimeNotProbed(t *testing.T) {
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
	if !strings.Contains(out, "not sent: the simulated runtime runs nothing there") {
		t.Errorf("the postStart hook was sent to the simulated pod IP:\n%s", out)
	}
}

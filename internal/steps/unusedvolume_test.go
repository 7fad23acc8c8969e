package steps

import (
	"strings"
	"testing"
)

// TestUnusedVolumeSkipped: a volume no container mounts is not set up, as
// the kubelet's volume manager skips it, so the missing Secret behind it
// fails nothing (the real kubelet runs such a pod; seen on the test
// cluster). The used volume is set up.
func TestUnusedVolumeSkipped(t *testing.T) {
	b := parse(t, `apiVersion: v1
kind: Pod
metadata: {name: unused}
spec:
  containers:
  - name: app
    image: registry.example/app:1
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: creds
    secret: {secretName: absent}
  - name: scratch
    emptyDir: {}
`)
	_, vol := throughVolumes(t, b, testOptions(t))
	var creds, scratch string
	for _, d := range vol.Result.Details {
		switch d.Key {
		case "creds":
			creds = d.Value
		case "scratch":
			scratch = d.Value
		}
	}
	if !strings.Contains(creds, "not set up: no container mounts it") || !strings.Contains(scratch, "emptyDir") {
		t.Errorf("details: creds %q, scratch %q", creds, scratch)
	}
	if vol.Result.Summary != "1 volume(s) ready" {
		t.Errorf("summary %q", vol.Result.Summary)
	}
}

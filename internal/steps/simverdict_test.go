package steps

import (
	"strings"
	"testing"
)

// TestSimulatedVerdictRestsOn runs pods on the simulated runtime and checks
// where each ends and what the verdict says it rests on: a server image
// with args only keeps running (it used to exit 0 and crash-loop); a
// script exits with its code; runAsNonRoot on an image the simulator does
// not know goes on, labelled (it used to fail as root), while busybox, a
// known image with no USER, fails exactly as the kubelet's
// verifyRunAsNonRoot fails it; an unknown program in an init container is
// assumed to complete, a classic init container's role.
func TestSimulatedVerdictRestsOn(t *testing.T) {
	pod := func(spec string) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default, uid: u1}\nspec:\n" + spec
	}
	tests := []struct {
		name    string
		yaml    string
		display string
		reason  string
		restsOn []string // substrings, each in some step's RestsOn
	}{
		{name: "server image, args only", display: "Running",
			yaml:    pod("  containers:\n  - {name: dns, image: coredns/coredns:1.9.4, args: [-conf, /etc/coredns/Corefile]}\n"),
			restsOn: []string{"assumed: the entrypoint of coredns/coredns:1.9.4 keeps running (a server)"}},
		{name: "a script's exit code", display: "Error", reason: "",
			yaml:    pod("  restartPolicy: Never\n  containers:\n  - {name: job, image: busybox:1.35, command: [sh, -c, 'echo failing; exit 3']}\n"),
			restsOn: []string{"script: exits 3 after `echo failing; exit 3`"}},
		{name: "runAsNonRoot, unknown image", display: "Running",
			yaml:    pod("  securityContext: {runAsNonRoot: true}\n  containers:\n  - {name: app, image: quay.io/argoproj/argocd:latest, args: [/usr/local/bin/argocd-server]}\n"),
			restsOn: []string{"assumed: image user unknown", "USER of quay.io/argoproj/argocd:latest", "verifyRunAsNonRoot", "on a node this passes if the image's USER is a non-zero numeric uid"}},
		{name: "runAsNonRoot, busybox runs as root", display: "CreateContainerConfigError", reason: "CreateContainerConfigError",
			yaml: pod("  securityContext: {runAsNonRoot: true}\n  containers:\n  - {name: app, image: busybox:1.35, command: [sleep, '3600']}\n")},
		{name: "runAsNonRoot with runAsUser decides alone", display: "Running",
			yaml: pod("  securityContext: {runAsNonRoot: true, runAsUser: 1000}\n  containers:\n  - {name: app, image: nginx, command: [sleep, infinity]}\n")},
		{name: "unknown program in an init container", display: "Running",
			yaml: pod("  initContainers:\n  - {name: copy, image: quay.io/metallb/speaker:main, command: [/cp-tool, /a, /b]}\n" +
				"  containers:\n  - {name: app, image: busybox:1.35, command: [sleep, '3600']}\n"),
			restsOn: []string{"assumed: it runs to completion and exits 0 (an init container): the simulator cannot read `/cp-tool /a /b`", "command: runs 1h, then exits 0 (`sleep 3600`)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := runAll(t, parse(t, tt.yaml), newSim(t), testOptions(t))
			if got := e.PodState().Display; got != tt.display {
				f, _ := e.Failed()
				t.Fatalf("display = %s (%s: %s), want %s", got, f.Result.Reason, f.Result.Message, tt.display)
			}
			if f, failed := e.Failed(); tt.reason != "" && (!failed || f.Result.Reason != tt.reason) {
				t.Errorf("failed = %v %q, want reason %q", failed, f.Result.Reason, tt.reason)
			}
			all := strings.Join(RestsOn(e.Steps()), "\n")
			for _, want := range tt.restsOn {
				if !strings.Contains(all, want) {
					t.Errorf("rests on:\n%s\nwant %q in it", all, want)
				}
			}
		})
	}
}

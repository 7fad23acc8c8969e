package cri_test

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podstep/podstep/internal/cri"
	"github.com/podstep/podstep/internal/mark"
	"github.com/podstep/podstep/internal/sim"
	"github.com/podstep/podstep/internal/sim/simtest"
)

// TestInfo asks the simulated runtime what `podstep info` shows, and counts
// podstep's sandboxes apart from a kubelet's.
func TestInfo(t *testing.T) {
	ctx := context.Background()
	c := simtest.Client(t, sim.Options{})
	for i, labels := range []map[string]string{
		{mark.ManagedLabel: "true", "io.kubernetes.pod.uid": "u0"},
		{"io.kubernetes.pod.uid": "u1"},
		{"io.kubernetes.pod.uid": "u2"},
		{"app": "not a kubelet's"},
	} {
		uid := string(rune('a' + i))
		if _, err := c.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "p" + uid, Namespace: "default", Uid: uid}, Labels: labels,
		}}); err != nil {
			t.Fatal(err)
		}
	}
	info, err := cri.Info(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version.RuntimeName != sim.RuntimeName || !info.Ready {
		t.Errorf("runtime %q ready=%t, want %q ready", info.Version.RuntimeName, info.Ready, sim.RuntimeName)
	}
	if info.Managed != 1 || info.Foreign != 2 {
		t.Errorf("managed %d, foreign %d; want 1 and 2", info.Managed, info.Foreign)
	}
}

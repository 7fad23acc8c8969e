package session

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podstep/podstep/internal/manifest"
)

func TestCheckShadow(t *testing.T) {
	for _, tt := range []struct {
		mode string
		sim  bool
		want string // "" for no error
	}{
		{"", false, ""}, {"auto", false, ""}, {"always", false, ""}, {"never", false, ""},
		{"auto", true, ""}, {"never", true, ""},
		{"always", true, "--sim and --shadow=always conflict"},
		{"yes", false, `--shadow "yes": expected auto, always or never`},
		{"Always", false, "expected auto, always or never"},
	} {
		err := CheckShadow(tt.mode, tt.sim)
		if tt.want == "" {
			if err != nil {
				t.Errorf("CheckShadow(%q, sim %v) = %v, want nil", tt.mode, tt.sim, err)
			}
			continue
		}
		var e *Error
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.As(err, &e) || e.Code != ExitUsage {
			t.Errorf("CheckShadow(%q, sim %v) = %v, want exit 2 saying %q", tt.mode, tt.sim, err, tt.want)
		}
	}
}

func TestPodImages(t *testing.T) {
	b := &manifest.Bundle{Pod: &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Image: "init:1"}},
		Containers:     []corev1.Container{{Image: "app:1"}, {Image: "side:2"}},
	}}}
	if got := strings.Join(PodImages(b), ","); got != "init:1,app:1,side:2" {
		t.Errorf("PodImages = %s", got)
	}
}

// A fleet runner (--fleet-host-dir) starts its shadow in the host's mount
// namespace, under HOST_DIR/shadows (the same path in the runner and on the
// host); auto stays auto (before issue 37 item 2 it became never).
func TestShadowFlagsFleetRunner(t *testing.T) {
	b := &manifest.Bundle{Pod: &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: "app:1"}}}}}
	for _, tt := range []struct {
		name, hostDir, mode string
		host                bool
		base                string
	}{
		{"on the node", "", ShadowAuto, false, ShadowBase()},
		{"a fleet runner, auto", "/var/lib/podstep-fleet", ShadowAuto, true, "/var/lib/podstep-fleet/shadows"},
		{"a fleet runner, never", "/var/lib/podstep-fleet", ShadowNever, true, "/var/lib/podstep-fleet/shadows"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := &RunFlags{Shadow: tt.mode}
			o.FleetHostDir = tt.hostDir
			f := o.shadowFlags(b, nil)
			if f.Mode != tt.mode || f.Host != tt.host || f.Base != tt.base {
				t.Errorf("mode %q host %v base %q; want %q %v %q", f.Mode, f.Host, f.Base, tt.mode, tt.host, tt.base)
			}
		})
	}
}
